// A rule is proved for the shapes its statement gives its variables, so it applies only where a
// graph's tensors have them: a symbol written twice names one size, a number that size exactly.
#include <gtest/gtest.h>

#include "loom/interpreter/parser.hpp"
#include "loom/interpreter/rule_graphs.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

pcg::Rule declared_rule(const std::string& text) {
  const spec::Module module = spec::parse_module(text, "<test>");
  return spec::rule_from_declaration(library(), module.rules.at(0));
}

// relu(relu(x)) over an input of `dims`.
pcg::Graph double_relu(std::vector<std::int64_t> dims) {
  pcg::Graph g;
  const int x = g.add_input("x", shape(std::move(dims)));
  const int inner = g.add_node(library(), "relu", {}, {{x, 0}});
  g.mark_output({g.add_node(library(), "relu", {}, {{inner, 0}}), 0});
  return g;
}

std::size_t matches(const pcg::Graph& g, const pcg::Rule& rule) { return pcg::find_matches(pcg::GraphIndex(g), rule).size(); }

TEST(DeclaredShapes, ASymbolWrittenTwiceMatchesOneSizeOnly) {
  const pcg::Rule square = declared_rule("rule square: forall x: [n, n]. relu(relu(x)) => relu(x);");
  EXPECT_EQ(matches(double_relu({32, 192}), square), 0u);
  const pcg::Graph g = double_relu({5, 5});
  const auto found = pcg::find_matches(pcg::GraphIndex(g), square);
  ASSERT_EQ(found.size(), 1u);
  const auto outcome = pcg::apply_match(g, square, found.front(), library());
  ASSERT_TRUE(outcome.rewrite);
  auto [want, got] = outputs_on_random_inputs(g, outcome.rewrite->graph, 3);
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(want[0].data, got[0].data);
  // The same law stated over two symbols applies to the rectangular tensor too.
  EXPECT_EQ(matches(double_relu({32, 192}), declared_rule("rule any: forall x: [m, n]. relu(relu(x)) => relu(x);")), 1u);
}

TEST(DeclaredShapes, ANumberMatchesThatSizeAndTheRankIsKept) {
  const pcg::Rule one_row = declared_rule("rule one_row: forall x: [1, n]. relu(relu(x)) => relu(x);");
  EXPECT_EQ(matches(double_relu({1, 7}), one_row), 1u);
  EXPECT_EQ(matches(double_relu({2, 7}), one_row), 0u);
  EXPECT_EQ(matches(double_relu({1, 7, 3}), one_row), 0u);
}

// What a match could not check from one dimension is held at the size the rule was typed at.
TEST(DeclaredShapes, SymbolsAMatchCannotBindAreHeldAtTheirTypedSizes) {
  const pcg::Rule doubled = declared_rule("rule doubled: forall x: [n, 2 * n]. relu(relu(x)) => relu(x);");
  const auto typed = doubled.lhs.node(*doubled.lhs.find("x")).output_shapes.at(0).dims;
  ASSERT_EQ(typed.size(), 2u);
  EXPECT_EQ(matches(double_relu(typed), doubled), 1u);
  EXPECT_EQ(matches(double_relu({3, 5}), doubled), 0u);
  EXPECT_EQ(matches(double_relu({typed[0] + 1, 2 * (typed[0] + 1)}), doubled), 0u);
  // An integer binder's domain, and a where-condition, are not checked at a match either.
  const pcg::Rule rows = declared_rule("rule rows: forall a: int in {2, 4}, x: [a, n]. relu(relu(x)) => relu(x);");
  const auto rows_typed = rows.lhs.node(*rows.lhs.find("x")).output_shapes.at(0).dims;
  EXPECT_EQ(matches(double_relu({rows_typed[0], 5}), rows), 1u);
  EXPECT_EQ(matches(double_relu({3, 5}), rows), 0u);
  const pcg::Rule wide = declared_rule("rule wide: forall x: [m, n] where m < n. relu(relu(x)) => relu(x);");
  const auto wide_typed = wide.lhs.node(*wide.lhs.find("x")).output_shapes.at(0).dims;
  EXPECT_EQ(matches(double_relu(wide_typed), wide), 1u);
  EXPECT_EQ(matches(double_relu({1, 9}), wide), 0u);
}

TEST(DeclaredShapes, ARuleAppliedRightToLeftKeepsThem) {
  const auto back = pcg::reverse_of(declared_rule("rule square: forall x: [n, n]. relu(relu(x)) => relu(x);"));
  ASSERT_TRUE(back);
  pcg::Graph rect, square;
  for (auto [g, dims] : {std::pair{&rect, std::vector<std::int64_t>{4, 6}}, std::pair{&square, std::vector<std::int64_t>{6, 6}}}) {
    const int x = g->add_input("x", shape(dims));
    g->mark_output({g->add_node(library(), "relu", {}, {{x, 0}}), 0});
  }
  EXPECT_EQ(matches(rect, *back), 0u);
  EXPECT_EQ(matches(square, *back), 1u);
}

TEST(DeclaredShapes, ARuleReadBackFromItsLibraryKeepsThem) {
  const pcg::Rule square = declared_rule("rule square: forall x: [n, n]. relu(relu(x)) => relu(x);");
  ASSERT_EQ(square.declared.variables.size(), 1u);
  const pcg::Rule back = pcg::rule_from_json(pcg::rule_to_json(square), library());
  EXPECT_EQ(back.declared, square.declared);
  EXPECT_EQ(matches(double_relu({32, 192}), back), 0u);
}

}  // namespace
}  // namespace loom::search
