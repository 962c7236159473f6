// Rules are typed when a library loads: a rule that cannot be typed at any size, or whose two sides
// differ in shape, stops the library at the rule, naming the side.
#include <gtest/gtest.h>

#include <string>

#include "../pcg/error_text.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/interpreter/rule_graphs.hpp"
#include "test_support.hpp"

namespace loom::spec {
namespace {

// The message loading `rules` gives, or "" when it loads.
std::string load_error(const std::string& rules) {
  return pcg::test_support::error_of([&] { Library::from_text(test::bundled_imports() + rules, "rules.loom"); });
}

TEST(RuleTyping, AReduceOfAReplicatedTensorIsRefusedAtTheRuleNamingTheSide) {
  const std::string error = load_error("rule reduce_copies: forall x: [m, n]. relu(x) => reduce<2>(replicate<2>(relu(x)));\n");
  EXPECT_NE(error.find("rules.loom:5:"), std::string::npos) << error;
  EXPECT_NE(error.find("rule reduce_copies: cannot be typed"), std::string::npos) << error;
  EXPECT_NE(error.find("the right-hand side"), std::string::npos) << error;
}

TEST(RuleTyping, SidesOfDifferentShapesAreRefusedWithBothShapes) {
  const std::string error = load_error("rule shrink: forall x: [m, n]. relu(x) => split<1, 2>(relu(x)).0;\n");
  EXPECT_NE(error.find("rules.loom:5:"), std::string::npos) << error;
  EXPECT_NE(error.find("rule shrink: the sides differ in shape: the left-hand side gives [8, 8]"), std::string::npos) << error;
  EXPECT_NE(error.find("the right-hand side [8, 2]"), std::string::npos) << error;
}

TEST(RuleTyping, WellTypedRulesLoadAndEveryBundledRuleTypes) {
  EXPECT_EQ(load_error("rule relu_rows: relu(x) => combine<0, 2>(relu(partition<0, 2>(x)));\n"
                       "rule split_cols: forall x: [m, n], y: [m, k]. split<1, n>(concat<1>(x, y)).1 => y;\n"),
            "");
  // Rules as `loom generate` writes them, which type only where sizes are related: m < n < 2m,
  // or a == n - m.
  EXPECT_EQ(
      load_error("rule between: forall a: int > 0, w: [m, n] where a < m && a < n && m < n.\n"
                 "  concat<0>(split<0, a>(w).0, split<0, a>(w).1) => split<0, m>(split<0, n>(concat<0>(w, w)).0).0;\n"
                 "rule difference: forall a: int > 0, w: [m, n] where m % 2 == 0 && n % 2 == 0 && a < m && a < n.\n"
                 "  matmul(split<1, a>(concat<0>(w, w)).1, w) => concat<0>(matmul(split<1, a>(w).1, w), matmul(split<1, a>(w).1, w));\n"),
      "");
  const Library bundled = Library::load({Library::default_specs_dir()});
  EXPECT_TRUE(type_rules(bundled).empty());
  EXPECT_FALSE(bundled.rules().empty());
}

}  // namespace
}  // namespace loom::spec
