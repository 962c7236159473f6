#include <gtest/gtest.h>

#include "loom/interpreter/library.hpp"

namespace loom::spec {
namespace {

using pcg::ParallelShape;

const Library& bundled() {
  static Library lib = Library::load({Library::default_specs_dir()});
  return lib;
}

ParallelShape shape(std::vector<std::int64_t> dims, std::vector<std::int64_t> D = {}, std::int64_t V = 1, std::int64_t R = 1) {
  return ParallelShape::partitioned(std::move(dims), std::move(D), V, R);
}

TEST(DerivedParallelism, MatmulDataModelAndReduction) {
  auto data = bundled().infer("matmul", {}, {shape({4, 6}, {2, 1}), shape({6, 8}, {}, 1, 2)});
  EXPECT_EQ(data[0], shape({4, 8}, {2, 1}));
  auto model = bundled().infer("matmul", {}, {shape({4, 6}, {}, 1, 2), shape({6, 8}, {1, 2})});
  EXPECT_EQ(model[0], shape({4, 8}, {1, 2}));
  auto reduction = bundled().infer("matmul", {}, {shape({4, 6}, {1, 2}), shape({6, 8}, {2, 1})});
  EXPECT_EQ(reduction[0], shape({4, 8}, {}, 2));
}

TEST(DerivedParallelism, PartialSumsEnterOnlyLinearBodies) {
  auto out = bundled().infer("matmul", {}, {shape({4, 6}, {}, 2), shape({6, 8}, {}, 1, 2)});
  EXPECT_EQ(out[0].V, 2);
  EXPECT_THROW(bundled().infer("relu", {}, {shape({4, 6}, {}, 2)}), LoomError);
  EXPECT_THROW(bundled().infer("ewadd", {}, {shape({4, 6}, {}, 2), shape({4, 6}, {}, 1, 2)}), LoomError);
  EXPECT_EQ(bundled().infer("ewadd", {}, {shape({4, 6}, {}, 2), shape({4, 6}, {}, 2)})[0].V, 2);
}

TEST(DerivedParallelism, InconsistentSplitsAreRejected) {
  EXPECT_THROW(bundled().infer("ewadd", {}, {shape({4, 6}, {2, 1}), shape({4, 6}, {}, 1, 2)}), LoomError);
  EXPECT_THROW(bundled().infer("matmul", {}, {shape({4, 6}, {2, 1}), shape({6, 8})}), LoomError);  // task counts
  EXPECT_EQ(bundled().infer("ewadd", {}, {shape({4, 6}, {1, 2}), shape({4, 6}, {1, 2})})[0], shape({4, 6}, {1, 2}));
}

TEST(DerivedParallelism, Conv2dSplitsBatchAndChannelsButNotSpace) {
  pcg::AttrMap a{{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}};
  auto batch = bundled().infer("conv2d", a, {shape({2, 4, 6, 6}, {2, 1, 1, 1}), shape({8, 4, 3, 3}, {}, 1, 2)});
  EXPECT_EQ(batch[0].D, (std::vector<std::int64_t>{2, 1, 1, 1}));
  auto in_channels = bundled().infer("conv2d", a, {shape({2, 4, 6, 6}, {1, 2, 1, 1}), shape({8, 4, 3, 3}, {1, 2, 1, 1})});
  EXPECT_EQ(in_channels[0].V, 2);
  EXPECT_THROW(bundled().infer("conv2d", a, {shape({2, 4, 6, 6}, {1, 1, 2, 1}), shape({8, 4, 3, 3}, {}, 1, 2)}), LoomError);
}

TEST(DerivedParallelism, ParallelFormsChangeDegrees) {
  auto p = bundled().infer("partition", {{"dim", 0}, {"degree", 2}}, {shape({4, 6})});
  EXPECT_EQ(p[0], shape({4, 6}, {2, 1}));
  EXPECT_EQ(bundled().infer("combine", {{"dim", 0}, {"degree", 2}}, p)[0], shape({4, 6}));
  auto r = bundled().infer("replicate", {{"degree", 2}}, {shape({4, 6})});
  EXPECT_EQ(r[0].R, 2);
  EXPECT_THROW(bundled().infer("reduce", {{"degree", 2}}, r), LoomError);  // reduce after replicate
  EXPECT_THROW(bundled().infer("partition", {{"dim", 0}, {"degree", 2}}, {shape({3, 6})}), LoomError);
  EXPECT_EQ(bundled().infer("allreduce", {{"degree", 2}}, {shape({4, 6}, {}, 2)})[0], shape({4, 6}, {}, 1, 2));
}

TEST(Diagnostics, MalformedSpecsNamePlaceAndCause) {
  try {
    Library::from_text("op f(x: [m]) -> [m] {\n  out[i] = y[i];\n}\nop g(x: [m]) -> [m] { out[i] = sum(p) x[i]; }\n", "bad.loom");
    FAIL() << "expected errors";
  } catch (const LoomError& e) {
    ASSERT_EQ(e.diagnostics().size(), 2u);
    EXPECT_EQ(e.diagnostics()[0].to_string().rfind("bad.loom:2:", 0), 0u);
    EXPECT_NE(e.diagnostics()[0].message.find("unknown tensor 'y'"), std::string::npos);
    EXPECT_NE(e.diagnostics()[1].message.find("never used"), std::string::npos);
  }
  try {
    Library::from_text("op f(x: [m]) -> [m] {\n  out[i] = x[i] +;\n}\n", "syntax.loom");
    FAIL() << "expected a syntax error";
  } catch (const LoomError& e) {
    ASSERT_FALSE(e.diagnostics().empty());
    EXPECT_EQ(e.diagnostics()[0].where.line, 2);
    EXPECT_EQ(e.diagnostics()[0].where.column, 18);
  }
}

}  // namespace
}  // namespace loom::spec
