// Match-and-apply speed of the rewrite engine on Inception-v3 and BERT-Large: the inner loop of the
// substitution search. Usage: loom_rewrite_bench [RULES.json|RULES.loom ...]; without arguments the
// bundled rule declarations. Prints its figures.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/interpreter/rule_files.hpp"
#include "loom/interpreter/rule_graphs.hpp"
#include "loom/models/registry.hpp"
#include "loom/pcg/graph_hash.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::vector<loom::pcg::Rule> load(const loom::spec::Library& library, const std::vector<std::string>& files) {
  if (files.empty()) return loom::spec::rules_of(library);
  std::vector<loom::pcg::Rule> rules;
  for (const auto& f : files)
    for (auto& r : loom::spec::load_rule_file(library, {loom::spec::Library::default_specs_dir()}, f)) rules.push_back(std::move(r));
  return rules;
}

void measure(const loom::spec::Library& library, const std::string& model, const std::vector<loom::pcg::Rule>& rules) {
  const loom::pcg::Graph graph = loom::models::build_model(library, model);
  const std::size_t ops = graph.operator_count();

  auto start = Clock::now();
  const loom::pcg::RuleIndex rule_index(rules);
  const double index_rules = seconds_since(start);

  constexpr int kRounds = 5;
  std::size_t matches = 0, candidates = 0;
  std::vector<std::pair<std::size_t, loom::pcg::Match>> all;
  start = Clock::now();
  for (int round = 0; round < kRounds; ++round) {
    const loom::pcg::GraphIndex index(graph);
    const auto cands = rule_index.candidates(index);
    candidates = cands.size();
    matches = 0;
    all.clear();
    for (std::size_t r : cands)
      for (auto& m : loom::pcg::find_matches(index, rules[r])) {
        ++matches;
        all.emplace_back(r, std::move(m));
      }
  }
  const double match_all = seconds_since(start) / kRounds;

  std::size_t applied = 0;
  double apply_seconds = 0, seeded_seconds = 0, full_seconds = 0, hash_seconds = 0;
  for (std::size_t i = 0; i < all.size() && applied < 200; i += std::max<std::size_t>(1, all.size() / 200)) {
    start = Clock::now();
    auto outcome = loom::pcg::apply_match(graph, rules[all[i].first], all[i].second, library);
    apply_seconds += seconds_since(start);
    if (!outcome.rewrite) continue;
    ++applied;
    const loom::pcg::Graph& g = outcome.rewrite->graph;
    start = Clock::now();
    const loom::pcg::GraphIndex index(g);
    for (std::size_t r : rule_index.candidates(index)) loom::pcg::find_matches(index, rules[r], &outcome.rewrite->touched);
    seeded_seconds += seconds_since(start);
    start = Clock::now();
    const loom::pcg::GraphIndex full_index(g);
    for (std::size_t r : rule_index.candidates(full_index)) loom::pcg::find_matches(full_index, rules[r]);
    full_seconds += seconds_since(start);
    start = Clock::now();
    volatile auto h = loom::pcg::graph_hash(g);
    (void)h;
    hash_seconds += seconds_since(start);
  }
  const double n = static_cast<double>(std::max<std::size_t>(applied, 1));
  std::printf(
      "%-13s %4zu ops, %5zu rules (%zu anchored here, indexed in %.2f ms): all matches %6zu in %8.3f ms; "
      "apply %.3f ms; re-match after a rewrite: seeded %.3f ms vs full %.3f ms; graph hash %.3f ms (%zu rewrites)\n",
      model.c_str(), ops, rules.size(), candidates, index_rules * 1e3, matches, match_all * 1e3, apply_seconds / n * 1e3,
      seeded_seconds / n * 1e3, full_seconds / n * 1e3, hash_seconds / n * 1e3, applied);
}

}  // namespace

int main(int argc, char** argv) {
  const auto library = loom::spec::Library::load({loom::spec::Library::default_specs_dir()});
  const auto rules = load(library, std::vector<std::string>(argv + 1, argv + argc));
  for (const char* model : {"inception_v3", "bert_large"}) measure(library, model, rules);
  return 0;
}
