#include "loom/search/substitution_search.hpp"

#include <chrono>
#include <cmath>
#include <memory>
#include <queue>
#include <unordered_set>

#include "loom/pcg/graph_hash.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"

namespace loom::search {
namespace {

struct Candidate {
  double seconds = 0;
  std::shared_ptr<const pcg::Graph> graph;
  std::vector<AppliedSubstitution> sequence;
};

struct SlowerFirst {
  bool operator()(const Candidate& a, const Candidate& b) const { return a.seconds > b.seconds; }
};

AppliedSubstitution applied(const pcg::Rule& rule, const pcg::Match& match) {
  return {rule.id, pcg::category_name(rule.category), rule.verification ? pcg::status_name(rule.verification->status) : "unverified",
          match.nodes, ""};
}

}  // namespace

SearchResult search_substitutions(const pcg::Graph& start, const std::vector<pcg::Rule>& rules, const pcg::OpCatalog& catalog,
                                  const std::function<double(const pcg::Graph&)>& cost, const SearchOptions& options,
                                  const std::function<void(const SearchStep&)>& progress) {
  const auto began = std::chrono::steady_clock::now();
  const pcg::RuleIndex rule_index(rules);
  SearchResult result;
  result.best = start;
  result.initial_seconds = result.best_seconds = cost(start);
  std::priority_queue<Candidate, std::vector<Candidate>, SlowerFirst> queue;
  std::unordered_set<std::uint64_t> seen{pcg::graph_hash(start)};
  queue.push({result.best_seconds, std::make_shared<const pcg::Graph>(start), {}});
  result.generated = 1;
  while (!queue.empty() && result.explored < options.budget) {
    if (options.max_seconds > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() > options.max_seconds)
      break;
    Candidate current = queue.top();
    queue.pop();
    if (current.seconds > options.alpha * result.best_seconds) continue;
    ++result.explored;
    const pcg::GraphIndex index(*current.graph);
    for (std::size_t r : rule_index.candidates(index)) {
      for (const pcg::Match& m : pcg::find_matches(index, rules[r])) {
        pcg::RewriteOutcome outcome = pcg::apply_match(*current.graph, rules[r], m, catalog);
        if (!outcome.rewrite) continue;
        if (!seen.insert(pcg::graph_hash(outcome.rewrite->graph)).second) continue;
        ++result.generated;
        const double seconds = cost(outcome.rewrite->graph);
        if (!std::isfinite(seconds)) continue;
        Candidate next{seconds, std::make_shared<const pcg::Graph>(std::move(outcome.rewrite->graph)), current.sequence};
        next.sequence.push_back(applied(rules[r], m));
        if (seconds < result.best_seconds) {
          result.best_seconds = seconds;
          result.best = *next.graph;
          result.sequence = next.sequence;
        }
        if (seconds <= options.alpha * result.best_seconds) queue.push(std::move(next));
      }
    }
    if (progress) progress({result.explored, result.best_seconds});
  }
  return result;
}

}  // namespace loom::search
