#include "loom/search/substitution_search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <unordered_set>

#include "loom/pcg/graph_hash.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"

namespace loom::search {
namespace {

struct Candidate {
  std::shared_ptr<const pcg::Graph> graph;
  std::vector<AppliedSubstitution> sequence;
  std::optional<double> seconds;  // its cost, once costed
};

AppliedSubstitution applied(const pcg::Rule& rule, const pcg::Match& match) {
  return {rule.id,
          pcg::category_name(rule.category),
          rule.verification ? pcg::status_name(rule.verification->status) : "unverified",
          match.nodes,
          "",
          rule.reversed};
}

double summed(const pcg::Graph& graph, const std::vector<pcg::NodeId>& nodes,
              const std::function<double(const pcg::Graph&, const pcg::Node&)>& node_seconds) {
  double total = 0;
  for (pcg::NodeId id : nodes)
    if (id >= 0) total += node_seconds(graph, graph.node(id));
  return total;
}

// The graphs waiting to be costed or expanded, least estimate first, holding no more than the
// budget can still take.
class BoundedQueue {
 public:
  void push(double estimate, Candidate c, std::size_t room) {
    if (room == 0) return;
    if (queue_.size() >= room) {
      auto worst = std::prev(queue_.end());
      if (worst->first <= estimate) return;
      queue_.erase(worst);
    }
    queue_.emplace(estimate, std::move(c));
  }
  bool empty() const { return queue_.empty(); }
  Candidate pop() {
    auto first = queue_.begin();
    Candidate out = std::move(first->second);
    queue_.erase(first);
    return out;
  }

 private:
  std::multimap<double, Candidate> queue_;
};

}  // namespace

SearchResult search_substitutions(const pcg::Graph& start, const std::vector<pcg::Rule>& rules, const pcg::OpCatalog& catalog,
                                  const std::function<double(const pcg::Graph&)>& cost, const SearchOptions& options,
                                  const std::function<void(const SearchStep&)>& progress) {
  const auto began = std::chrono::steady_clock::now();
  const pcg::RuleIndex rule_index(rules);
  SearchResult result;
  result.best = start;
  result.initial_seconds = result.best_seconds = cost(start);
  result.generated = result.rewrites = 1;
  BoundedQueue queue;
  std::unordered_set<std::uint64_t> seen{pcg::graph_hash(start)};
  queue.push(result.best_seconds, {std::make_shared<const pcg::Graph>(start), {}, result.best_seconds}, options.budget + 1);
  auto room = [&] { return options.budget + 1 - std::min(options.budget + 1, result.generated); };
  while (!queue.empty() && result.explored < options.budget) {
    if (options.max_seconds > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() > options.max_seconds)
      break;
    Candidate current = queue.pop();
    if (!current.seconds) {
      if (result.generated > options.budget) break;
      ++result.generated;
      current.seconds = cost(*current.graph);
      if (*current.seconds < result.best_seconds) {
        result.best_seconds = *current.seconds;
        result.best = *current.graph;
        result.sequence = current.sequence;
      }
    }
    const double seconds = *current.seconds;
    if (!std::isfinite(seconds) || seconds > options.alpha * result.best_seconds) continue;
    ++result.explored;

    // Each rewrite waits for its turn with the estimate its parent's cost plus the change in the
    // nodes it replaces and inserts; it is costed in full only when its turn comes.
    const pcg::GraphIndex index(*current.graph);
    for (std::size_t r : rule_index.candidates(index)) {
      for (const pcg::Match& m : pcg::find_matches(index, rules[r])) {
        pcg::RewriteOutcome outcome = pcg::apply_match(*current.graph, rules[r], m, catalog);
        if (!outcome.rewrite) continue;
        if (!seen.insert(pcg::graph_hash(outcome.rewrite->graph)).second) continue;
        ++result.rewrites;
        double estimate = seconds;
        if (options.node_seconds)
          estimate += summed(outcome.rewrite->graph, outcome.rewrite->inserted, options.node_seconds) -
                      summed(*current.graph, m.matched_nodes(), options.node_seconds);
        if (estimate > options.alpha * result.best_seconds) continue;
        Candidate next{std::make_shared<const pcg::Graph>(std::move(outcome.rewrite->graph)), current.sequence, std::nullopt};
        next.sequence.push_back(applied(rules[r], m));
        queue.push(estimate, std::move(next), room());
      }
    }
    if (progress) progress({result.explored, result.best_seconds});
  }
  return result;
}

}  // namespace loom::search
