#include "onnx_import/rule_fusion.hpp"

#include <map>
#include <optional>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"
#include "onnx_import/graph_copy.hpp"

namespace loom::models::onnx_import {
namespace {

// The first match of any rule that applies, rewritten; none when no rule applies anywhere.
std::optional<std::pair<pcg::Graph, std::string>> fuse_once(const pcg::Graph& graph, const NamedValues& constants,
                                                            const std::vector<pcg::Rule>& rules, const pcg::RuleIndex& by_anchor,
                                                            const pcg::OpCatalog& catalog) {
  const pcg::GraphIndex index(graph, [&](const pcg::Node& n) -> std::optional<double> {
    auto it = constants.find(n.name);
    if (it == constants.end() || it->second.size() != 1) return std::nullopt;
    return it->second.data.front();
  });
  for (std::size_t r : by_anchor.candidates(index)) {
    for (const pcg::Match& match : pcg::find_matches(index, rules[r], nullptr)) {
      pcg::RewriteOutcome outcome = pcg::apply_match(graph, rules[r], match, catalog);
      if (outcome.rewrite) return std::make_pair(std::move(outcome.rewrite->graph), rules[r].id);
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> fuse_with_rules(pcg::Graph& graph, NamedValues& constants, const std::vector<pcg::Rule>& rules,
                                         const pcg::OpCatalog& catalog) {
  if (rules.empty()) return {};
  std::map<std::string, int> fused;
  // Fusing rules shrink the graph; rules that keep rewriting one another's results never stop.
  const std::size_t bound = 10 * graph.size() + 100;
  std::size_t applied = 0;
  const pcg::RuleIndex by_anchor(rules);
  while (auto next = fuse_once(graph, constants, rules, by_anchor, catalog)) {
    graph = std::move(next->first);
    ++fused[next->second];
    if (++applied > bound)
      throw LoomError("the fusion rules keep rewriting the model (rule " + next->second + " applied " +
                      std::to_string(fused[next->second]) + " times): some of them undo or grow what others make");
  }
  if (fused.empty()) return {};
  graph = without_unread_constants(graph, constants);
  std::vector<std::string> notes;
  for (const auto& [rule, count] : fused)
    notes.push_back("rule " + rule + " fused " + std::to_string(count) + (count == 1 ? " place" : " places"));
  return notes;
}

}  // namespace loom::models::onnx_import
