// Rules with several outputs merge operators that read one input (attention projections,
// Inception's branches) into one wider operator and a split, at whatever sizes the graph has:
// attributes written as a size symbol or integer binder stay open.
#include <gtest/gtest.h>

#include <algorithm>

#include "loom/interpreter/rule_graphs.hpp"
#include "loom/pcg/graph_json.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"
#include "loom/pcg/rule_symbols.hpp"
#include "loom/pcg/weight_folding.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/plan.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

const pcg::Rule& unity_rule(const std::string& id) {
  const auto& rules = unity_rules();
  auto it = std::find_if(rules.begin(), rules.end(), [&](const pcg::Rule& r) { return r.id == id; });
  if (it == rules.end()) throw std::runtime_error("no rule " + id);
  return *it;
}

std::size_t count_op(const pcg::Graph& g, const std::string& op) {
  return static_cast<std::size_t>(std::count_if(g.nodes().begin(), g.nodes().end(), [&](const pcg::Node& n) { return n.op == op; }));
}

// Three products of one input, of widths the rule was not typed at, each a graph output.
pcg::Graph three_projections() {
  pcg::Graph g;
  const int x = g.add_input("x", shape({6, 10}));
  int i = 0;
  for (std::int64_t width : {12, 4, 12}) {
    const int w = g.add_input("w" + std::to_string(i++), shape({10, width}), true);
    g.mark_output({g.add_node(library(), "matmul", {}, {{x, 0}, {w, 0}}), 0});
  }
  return g;
}

// Applies the first match of `rule` that the graph admits; fails the test when none applies.
pcg::Graph apply_first(const pcg::Graph& g, const pcg::Rule& rule) {
  const pcg::GraphIndex index(g);
  for (const pcg::Match& m : pcg::find_matches(index, rule)) {
    auto outcome = pcg::apply_match(g, rule, m, library());
    if (outcome.rewrite) return std::move(outcome.rewrite->graph);
  }
  ADD_FAILURE() << "rule " << rule.id << " applies nowhere";
  return g;
}

void expect_same_values(const pcg::Graph& before, const pcg::Graph& after) {
  auto [want, got] = outputs_on_random_inputs(before, after, 7);
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t o = 0; o < want.size(); ++o) {
    ASSERT_EQ(want[o].dims, got[o].dims) << "output " << o;
    for (std::size_t i = 0; i < want[o].data.size(); ++i)
      ASSERT_NEAR(want[o].data[i], got[o].data[i], 1e-9) << "output " << o << " at " << i;
  }
}

TEST(MultiOutputRules, ASideWithSeveralOutputsIsOneGraphSharingWhatItWritesTwice) {
  const pcg::Rule& rule = unity_rule("merge_matmuls");
  EXPECT_EQ(rule.lhs.outputs().size(), 2u);
  ASSERT_EQ(rule.rhs.outputs().size(), 2u);
  EXPECT_EQ(count_op(rule.rhs, "matmul"), 1u);
  EXPECT_EQ(count_op(rule.rhs, "split"), 1u);
  EXPECT_EQ(rule.rhs.outputs()[0].node, rule.rhs.outputs()[1].node);
  EXPECT_NE(rule.rhs.outputs()[0].port, rule.rhs.outputs()[1].port);
  ASSERT_EQ(rule.open_attributes.size(), 1u);
  EXPECT_TRUE(rule.open_attributes[0].in_rhs);
  EXPECT_EQ(rule.open_attributes[0].attribute, "at");
  ASSERT_EQ(rule.symbols.size(), 1u);
  EXPECT_EQ(rule.symbols[0].variable, "a");
  EXPECT_EQ(rule.symbols[0].dim, 1);
}

TEST(MultiOutputRules, MergesThreeProjectionsAtSizesTheRuleWasNotTypedAt) {
  const pcg::Graph before = three_projections();
  const pcg::Rule& rule = unity_rule("merge_matmuls");
  const pcg::Graph once = apply_first(before, rule);
  EXPECT_EQ(count_op(once, "matmul"), 2u);
  expect_same_values(before, once);
  const pcg::Graph twice = apply_first(once, rule);
  EXPECT_EQ(count_op(twice, "matmul"), 1u);
  EXPECT_EQ(count_op(twice, "split"), 2u);
  expect_same_values(before, twice);
}

std::vector<const pcg::Node*> folded_weights(const pcg::Graph& g) {
  std::vector<const pcg::Node*> out;
  for (const pcg::Node& n : g.nodes())
    if (n.folded_from) out.push_back(&n);
  return out;
}

std::vector<std::string> weight_names(const pcg::Graph& g) {
  std::vector<std::string> out;
  for (const pcg::Node& n : g.nodes())
    if (n.op == pcg::kWeightOp) out.push_back(n.name);
  return out;
}

TEST(MultiOutputRules, MergedWeightsAreFoldedIntoOneWeightMadeOfThem) {
  const pcg::Graph before = three_projections();
  const pcg::Rule& rule = unity_rule("merge_matmuls");
  const pcg::Graph once = apply_first(before, rule);
  EXPECT_EQ(count_op(once, "concat"), 0u);
  ASSERT_EQ(folded_weights(once).size(), 1u);
  const pcg::Node& folded = *folded_weights(once).front();
  EXPECT_EQ(folded.op, pcg::kWeightOp);
  const std::vector<std::string> parts = weight_names(*folded.folded_from.parts);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(folded.name, parts[0] + "+" + parts[1]);
  EXPECT_EQ(count_op(*folded.folded_from.parts, "concat"), 1u);
  EXPECT_EQ(weight_names(once).size(), 2u);  // the folded weight and the third
  expect_same_values(before, once);

  // The second merge folds the folded weight with the third: one recipe of all three.
  const pcg::Graph twice = apply_first(once, rule);
  ASSERT_EQ(folded_weights(twice).size(), 1u);
  EXPECT_EQ(weight_names(*folded_weights(twice).front()->folded_from.parts).size(), 3u);
  EXPECT_EQ(weight_names(twice).size(), 1u);
  expect_same_values(before, twice);

  const pcg::Graph back = pcg::unfolded(twice);
  EXPECT_TRUE(folded_weights(back).empty());
  EXPECT_EQ(count_op(back, "concat"), 2u);
  EXPECT_EQ(weight_names(back).size(), 3u);
  expect_same_values(before, back);
  EXPECT_EQ(pcg::graph_from_json(pcg::graph_to_json(twice), library()), twice);
}

TEST(MultiOutputRules, AFoldedWeightIsFixedWhenAllItsPartsAreAndRefusedWhenSomeAre) {
  const pcg::Graph once = apply_first(three_projections(), unity_rule("merge_matmuls"));
  ASSERT_EQ(folded_weights(once).size(), 1u);
  const pcg::Node& folded = *folded_weights(once).front();
  const std::vector<std::string> parts = weight_names(*folded.folded_from.parts);
  EXPECT_EQ(fixed_weights_in(once, {parts[0], parts[1]}), (std::set<std::string>{folded.name}));
  EXPECT_TRUE(fixed_weights_in(once, {}).empty());
  // The search costs it so too: no gradient where every part is fixed.
  const Machine m = load_machine("p100").with_nodes(1);
  CostModel all_fixed(library(), m), half_fixed(library(), m);
  all_fixed.keep_fixed({parts[0], parts[1]});
  half_fixed.keep_fixed({parts[0]});
  EXPECT_FALSE(all_fixed.trains(once, folded));
  EXPECT_TRUE(half_fixed.trains(once, folded));
  EXPECT_TRUE(CostModel(library(), m).trains(once, folded));
  try {
    fixed_weights_in(once, {parts[1]});
    ADD_FAILURE() << "a folded weight half fixed was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("weight '" + parts[1] + "' is fixed, but the plan folds it into '" + folded.name + "'"),
              std::string::npos)
        << e.what();
  }
}

TEST(MultiOutputRules, AWeightSomethingElseReadsIsNotFolded) {
  pcg::Graph g;
  const int x = g.add_input("x", shape({6, 10}));
  const int a = g.add_input("a", shape({10, 12}), true);
  const int b = g.add_input("b", shape({10, 4}), true);
  g.mark_output({g.add_node(library(), "matmul", {}, {{x, 0}, {a, 0}}), 0});
  g.mark_output({g.add_node(library(), "matmul", {}, {{x, 0}, {b, 0}}), 0});
  g.mark_output({g.add_node(library(), "relu", {}, {{b, 0}}), 0});
  const pcg::Graph merged = apply_first(g, unity_rule("merge_matmuls"));
  EXPECT_EQ(count_op(merged, "concat"), 1u);
  EXPECT_TRUE(folded_weights(merged).empty());
  expect_same_values(g, merged);
}

TEST(MultiOutputRules, AFoldedRecipeThatDoesNotRearrangeItsWeightsIsRefusedInAPlanFile) {
  const pcg::Graph merged = apply_first(three_projections(), unity_rule("merge_matmuls"));
  nlohmann::json j = pcg::graph_to_json(merged);
  for (auto& node : j["nodes"])
    if (node.contains("folded_from")) node["folded_from"]["outputs"] = nlohmann::json::array();
  try {
    pcg::graph_from_json(j, library());
    ADD_FAILURE() << "a recipe without an output was read";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("folded_from: a folded weight's recipe has one output, not 0"), std::string::npos) << e.what();
  }
}

TEST(MultiOutputRules, TheReverseSplitsAMergedProductAtAnyPoint) {
  const pcg::Graph before = three_projections();
  // The merge with its concatenation: a folded weight is taken apart only by unfolding it.
  const pcg::Graph merged = pcg::unfolded(apply_first(before, unity_rule("merge_matmuls")));
  const auto back = pcg::reverse_of(unity_rule("merge_matmuls"));
  ASSERT_TRUE(back);
  ASSERT_EQ(back->open_attributes.size(), 1u);
  EXPECT_FALSE(back->open_attributes[0].in_rhs);
  const pcg::Graph unmerged = apply_first(merged, *back);
  EXPECT_EQ(count_op(unmerged, "matmul"), 3u);
  EXPECT_EQ(count_op(unmerged, "split"), 0u);
  expect_same_values(before, unmerged);
}

// Two convolutions of one input; `stride` for both.
pcg::Graph two_convolutions(std::int64_t stride) {
  pcg::Graph g;
  const int x = g.add_input("x", shape({2, 3, 8, 8}));
  const int a = g.add_input("a", shape({4, 3, 1, 1}), true);
  const int b = g.add_input("b", shape({6, 3, 1, 1}), true);
  const pcg::AttrMap attrs = {{"stride_h", stride}, {"stride_w", stride}, {"pad_h", 0}, {"pad_w", 0}, {"act", 1}};
  g.mark_output({g.add_node(library(), "conv2d", attrs, {{x, 0}, {a, 0}}), 0});
  g.mark_output({g.add_node(library(), "conv2d", attrs, {{x, 0}, {b, 0}}), 0});
  return g;
}

TEST(MultiOutputRules, AnIntegerBinderTakesTheMatchedAttributeWithinItsDomain) {
  const pcg::Rule& rule = unity_rule("merge_convs");
  const pcg::Graph before = two_convolutions(2);
  const pcg::Graph after = apply_first(before, rule);
  EXPECT_EQ(count_op(after, "conv2d"), 1u);
  for (const pcg::Node& n : after.nodes())
    if (n.op == "conv2d") {
      EXPECT_EQ(n.attrs.at("stride_h"), 2);
      EXPECT_EQ(n.attrs.at("act"), 1);
    }
  expect_same_values(before, after);
  // Stride 4 lies outside `sh: int in {1, 2}`, which is all the proof covers.
  const pcg::Graph wide = two_convolutions(4);
  EXPECT_TRUE(pcg::find_matches(pcg::GraphIndex(wide), rule).empty());
}

TEST(MultiOutputRules, OperatorsWithDifferentAttributesDoNotMerge) {
  pcg::Graph g = two_convolutions(1);
  pcg::Graph changed;
  const int x = changed.add_input("x", shape({2, 3, 8, 8}));
  const int a = changed.add_input("a", shape({4, 3, 1, 1}), true);
  const int b = changed.add_input("b", shape({6, 3, 1, 1}), true);
  changed.mark_output(
      {changed.add_node(library(), "conv2d", {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 0}, {"pad_w", 0}, {"act", 1}}, {{x, 0}, {a, 0}}),
       0});
  changed.mark_output(
      {changed.add_node(library(), "conv2d", {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 0}, {"pad_w", 0}, {"act", 0}}, {{x, 0}, {b, 0}}),
       0});
  EXPECT_FALSE(pcg::find_matches(pcg::GraphIndex(g), unity_rule("merge_convs")).empty());
  EXPECT_TRUE(pcg::find_matches(pcg::GraphIndex(changed), unity_rule("merge_convs")).empty());
}

TEST(MultiOutputRules, OpenAttributesSurviveTheRuleLibraryFile) {
  const pcg::Rule& rule = unity_rule("merge_convs");
  const pcg::Rule read = pcg::rule_from_json(pcg::rule_to_json(rule), library());
  EXPECT_EQ(read.symbols, rule.symbols);
  EXPECT_EQ(read.open_attributes, rule.open_attributes);
  nlohmann::json bad = pcg::rule_to_json(rule);
  bad["open_attributes"][0]["symbol"] = "nowhere";
  try {
    pcg::rule_from_json(bad, library());
    FAIL() << "an open attribute naming no symbol was read";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("open_attributes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nowhere"), std::string::npos) << e.what();
  }
}

// The one rule of `text`, over the bundled shape and linear-algebra operators.
pcg::Rule typed_rule(const std::string& text) {
  const std::string ops = spec::Library::default_specs_dir() + "/ops/";
  const spec::Library lib = spec::Library::from_text("import \"" + ops + "shape.loom\";\nimport \"" + ops + "linalg.loom\";\n" + text);
  return spec::rule_from_declaration(lib, *lib.rules().at(0));
}

TEST(MultiOutputRules, ASymbolAMatchCouldNotCheckStaysClosed) {
  // `k` is an integer binder that a shape depends on: the proof covers k = 4 only.
  EXPECT_TRUE(
      typed_rule("rule a: forall k: int in {4}, x: [m, k], y: [m, k]. split<1, k>(concat<1>(x, y)).0 => x;\n").open_attributes.empty());
  // `n` inside a larger attribute expression would keep its typed value there.
  EXPECT_TRUE(typed_rule("rule b: forall x: [m, n], y: [m, p]. split<1, n>(concat<1>(x, y)).0 => split<1, (n + 0)>(concat<1>(x, y)).0;\n")
                  .open_attributes.empty());
  // A where-condition relates the symbols.
  EXPECT_TRUE(
      typed_rule("rule c: forall x: [m, n], y: [m, p] where n < p. split<1, n>(concat<1>(x, y)).0 => x;\n").open_attributes.empty());
  // Written bare and nowhere else, it stays open.
  EXPECT_EQ(typed_rule("rule d: forall x: [m, n], y: [m, p]. split<1, n>(concat<1>(x, y)).0 => x;\n").open_attributes.size(), 1u);
}

TEST(MultiOutputRules, EveryDimensionASizeSymbolNamesIsCheckedAtTheMatch) {
  const pcg::Rule& rule = unity_rule("merge_head_projs");
  auto h = std::find_if(rule.symbols.begin(), rule.symbols.end(), [](const pcg::RuleSymbol& s) { return s.name == "h"; });
  ASSERT_NE(h, rule.symbols.end());
  EXPECT_EQ(h->variable, "w");
  EXPECT_EQ(h->dim, 0);
  ASSERT_EQ(h->same_as.size(), 1u);
  EXPECT_EQ(h->same_as[0], (pcg::DimRef{"c", 0}));
  // Bindings that disagree on `h` give no values.
  pcg::Graph g;
  const pcg::NodeId w = g.add_input("w", shape({2, 6, 3}));
  const pcg::NodeId c = g.add_input("c", shape({3, 3}));
  EXPECT_FALSE(pcg::symbol_values(rule, g, std::vector<pcg::NodeId>(rule.lhs.size(), -1), {{"w", {w, 0}}, {"c", {c, 0}}}));
}

TEST(MultiOutputRules, ALeftHandOutputThatIsABareVariableIsRefused) {
  try {
    typed_rule("rule e: forall x: [m, n], y: [m, n]. (split<1, n>(concat<1>(x, y)).0, x) => (x, x);\n");
    FAIL() << "the rule was typed";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("bare variable"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::search
