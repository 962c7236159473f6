// An operator written in a spec file at test time is enumerated, fingerprinted and yields
// rules, algebraic and parallel, with no C++ change and no rebuild.
#include "support.hpp"

namespace loom::superopt::test {
namespace {

TEST(UserOp, FusedMatmulReluIsFoundEqualToTheUnfusedPair) {
  const auto dir = scratch_dir("user_op");
  const std::string specs = spec::Library::default_specs_dir();
  write_text(dir / "fused.loom", "import \"" + specs +
                                     "/ops/core.loom\";\n"
                                     "import \"" +
                                     specs +
                                     "/ops/linalg.loom\";\n"
                                     "import \"" +
                                     specs +
                                     "/ops/parallel.loom\";\n"
                                     "op dense_relu(a: [m, k], b: [k, n]) -> [m, n] {\n"
                                     "  out[i, j] = max(sum(p) (a[i, p] * b[p, j]), 0);\n"
                                     "}\n");
  const spec::Library library = spec::Library::load({(dir / "fused.loom").string()});
  auto options = small_run({"matmul", "relu", "dense_relu"}, {"combine", "replicate"}, 3, "x: [4, 6], p: [4, 6] {D: [2, 1]}, w: [6, 10]");
  auto r = generate(library, options);

  const pcg::Rule* fused = find_rule(r.rules, "dense_relu(x, w)", "relu(matmul(x, w))");
  ASSERT_NE(fused, nullptr) << list_rules(r.rules);
  EXPECT_EQ(fused->category, pcg::RuleCategory::Algebraic);
  // The new op's data parallelism, derived from its comprehension.
  const pcg::Rule* parallel = find_rule(r.rules, "dense_relu(combine<0, 2>(p), w)", "combine<0, 2>(dense_relu(p, replicate<2>(w)))");
  ASSERT_NE(parallel, nullptr) << list_rules(r.rules);
  EXPECT_EQ(parallel->category, pcg::RuleCategory::Parallel);

  // The written spec file imports the user's file and loads.
  write_text(dir / "rules.loom", rules_spec_text(library, r, dir.string()));
  const spec::Library reloaded = spec::Library::load({(dir / "rules.loom").string()});
  EXPECT_EQ(reloaded.rules().size(), r.rules.rules.size());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loom::superopt::test
