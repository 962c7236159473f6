// Parallel shapes derived from the operators' comprehensions (Library::infer), the parallel and
// fused forms, the per-dimension summary, and the cost model.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "loom/interpreter/cost.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/interpreter/parallel_rules.hpp"
#include "test_support.hpp"

namespace loom::spec {
namespace {

using pcg::ParallelShape;
using test::bundled;
using test::pshape;
using Dims = std::vector<std::int64_t>;

std::vector<ParallelShape> infer(const std::string& op, const std::vector<ParallelShape>& in, const pcg::AttrMap& attrs = {}) {
  return bundled().infer(op, attrs, in);
}

ParallelShape infer1(const std::string& op, const std::vector<ParallelShape>& in, const pcg::AttrMap& attrs = {}) {
  auto out = infer(op, in, attrs);
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? ParallelShape{} : out[0];
}

// ---- matmul -----------------------------------------------------------------------------------

TEST(ParallelRules, MatmulDataParallelism) {
  EXPECT_EQ(infer1("matmul", {pshape({4, 6}, {2, 1}), pshape({6, 8}, {}, 1, 2)}), pshape({4, 8}, {2, 1}));
  EXPECT_EQ(infer1("matmul", {pshape({8, 6}, {4, 1}), pshape({6, 8}, {}, 1, 4)}), pshape({8, 8}, {4, 1}));
}

TEST(ParallelRules, MatmulModelParallelism) {
  EXPECT_EQ(infer1("matmul", {pshape({4, 6}, {}, 1, 2), pshape({6, 8}, {1, 2})}), pshape({4, 8}, {1, 2}));
}

TEST(ParallelRules, MatmulReductionParallelism) {
  EXPECT_EQ(infer1("matmul", {pshape({4, 6}, {1, 2}), pshape({6, 8}, {2, 1})}), pshape({4, 8}, {}, 2));
}

TEST(ParallelRules, MatmulAcceptsPartialSumsOnOneSide) {
  EXPECT_EQ(infer1("matmul", {pshape({4, 6}, {}, 2), pshape({6, 8}, {}, 1, 2)}), pshape({4, 8}, {}, 2));
  EXPECT_EQ(infer1("matmul", {pshape({4, 6}, {}, 1, 2), pshape({6, 8}, {}, 2)}), pshape({4, 8}, {}, 2));
  // A product of two partial sums is not a partial sum of the product.
  EXPECT_THROW(infer("matmul", {pshape({4, 6}, {}, 2), pshape({6, 8}, {}, 2)}), LoomError);
}

TEST(ParallelRules, MatmulGridAndLeftoverReplicas) {
  // Rows split 2 in x and columns 2 in y, each replicated twice: a 2x2 grid over 4 tasks.
  EXPECT_EQ(infer1("matmul", {pshape({4, 6}, {2, 1}, 1, 2), pshape({6, 8}, {1, 2}, 1, 2)}), pshape({4, 8}, {2, 2}));
  // Rows split 2 over 4 tasks: the output keeps 2 replicas.
  EXPECT_EQ(infer1("matmul", {pshape({4, 6}, {2, 1}, 1, 2), pshape({6, 8}, {}, 1, 4)}), pshape({4, 8}, {2, 1}, 1, 2));
}

TEST(ParallelRules, MismatchedTaskCountsAreRejected) {
  EXPECT_THROW(infer("matmul", {pshape({4, 6}, {2, 1}), pshape({6, 8})}), LoomError);
  EXPECT_THROW(infer("matmul", {pshape({4, 6}, {2, 1}), pshape({6, 8}, {}, 1, 4)}), LoomError);
  EXPECT_THROW(infer("ewadd", {pshape({4, 6}, {2, 1}), pshape({4, 6}, {2, 2})}), LoomError);
  try {
    infer("matmul", {pshape({4, 6}, {2, 1}), pshape({6, 8})});
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("tasks"), std::string::npos) << e.what();
  }
}

// ---- elementwise ----------------------------------------------------------------------------------

TEST(ParallelRules, PartialSumsDoNotPassNonlinearOps) {
  EXPECT_THROW(infer("relu", {pshape({4, 6}, {}, 2)}), LoomError);
  EXPECT_THROW(infer("sigmoid", {pshape({4, 6}, {}, 2)}), LoomError);
  EXPECT_THROW(infer("ewmul", {pshape({4, 6}, {}, 2), pshape({4, 6}, {}, 2)}), LoomError);
  // ...but pass linear ones.
  EXPECT_EQ(infer1("identity", {pshape({4, 6}, {}, 2)}), pshape({4, 6}, {}, 2));
  EXPECT_EQ(infer1("ewmul", {pshape({4, 6}, {}, 2), pshape({4, 6}, {}, 1, 2)}), pshape({4, 6}, {}, 2));
  EXPECT_EQ(infer1("ewdiv", {pshape({4, 6}, {}, 2), pshape({4, 6}, {}, 1, 2)}), pshape({4, 6}, {}, 2));
  EXPECT_THROW(infer("ewdiv", {pshape({4, 6}, {}, 1, 2), pshape({4, 6}, {}, 2)}), LoomError);  // divisor
}

TEST(ParallelRules, UnaryOpsPassEverySplitAndReplica) {
  for (const char* op : {"relu", "sigmoid", "tanh", "gelu"}) {
    SCOPED_TRACE(op);
    EXPECT_EQ(infer1(op, {pshape({4, 6, 2}, {2, 3, 1})}), pshape({4, 6, 2}, {2, 3, 1}));
    EXPECT_EQ(infer1(op, {pshape({4, 6}, {}, 1, 4)}), pshape({4, 6}, {}, 1, 4));
  }
  ParallelShape pipelined = pshape({4, 6});
  pipelined.P = {2, 1};
  EXPECT_EQ(infer1("relu", {pipelined}), pipelined);
}

TEST(ParallelRules, EwaddNeedsBothInputsSplitAlike) {
  EXPECT_THROW(infer("ewadd", {pshape({4, 6}, {2, 1}), pshape({4, 6}, {}, 1, 2)}), LoomError);
  EXPECT_THROW(infer("ewadd", {pshape({4, 6}, {}, 1, 2), pshape({4, 6}, {1, 2})}), LoomError);
  EXPECT_THROW(infer("ewadd", {pshape({4, 6}, {2, 1}), pshape({4, 6}, {1, 2})}), LoomError);
  EXPECT_EQ(infer1("ewadd", {pshape({4, 6}, {2, 1}), pshape({4, 6}, {2, 1})}), pshape({4, 6}, {2, 1}));
  EXPECT_EQ(infer1("ewadd", {pshape({4, 6}, {1, 2}), pshape({4, 6}, {1, 2})}), pshape({4, 6}, {1, 2}));
  EXPECT_EQ(infer1("ewadd", {pshape({4, 6}, {2, 3}), pshape({4, 6}, {2, 3})}), pshape({4, 6}, {2, 3}));
  // Partial sums add when both carry the same number of them.
  EXPECT_EQ(infer1("ewadd", {pshape({4, 6}, {}, 2), pshape({4, 6}, {}, 2)}), pshape({4, 6}, {}, 2));
  EXPECT_THROW(infer("ewadd", {pshape({4, 6}, {}, 2), pshape({4, 6}, {}, 1, 2)}), LoomError);
  EXPECT_THROW(infer("ewadd", {pshape({4, 6}, {}, 2, 2), pshape({4, 6}, {}, 4)}), LoomError);
}

TEST(ParallelRules, LinearBiasMustMatchThePartialSums) {
  // k split: the product is a partial sum; a replicated bias would be added once per partial.
  EXPECT_THROW(infer("linear", {pshape({4, 6}, {1, 2}), pshape({6, 8}, {2, 1}), pshape({8}, {}, 1, 2)}), LoomError);
  EXPECT_EQ(infer1("linear", {pshape({4, 6}, {1, 2}), pshape({6, 8}, {2, 1}), pshape({8}, {}, 2)}), pshape({4, 8}, {}, 2));
  // Output features split in the weight and the bias.
  EXPECT_EQ(infer1("linear", {pshape({4, 6}, {}, 1, 2), pshape({6, 8}, {1, 2}), pshape({8}, {2})}), pshape({4, 8}, {1, 2}));
}

// ---- convolution -----------------------------------------------------------------------------------

const pcg::AttrMap kConv{{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}};

TEST(ParallelRules, Conv2dBatchOutChannelAndInChannel) {
  auto batch = infer1("conv2d", {pshape({2, 4, 6, 6}, {2, 1, 1, 1}), pshape({8, 4, 3, 3}, {}, 1, 2)}, kConv);
  EXPECT_EQ(batch, pshape({2, 8, 6, 6}, {2, 1, 1, 1}));
  auto out_channels = infer1("conv2d", {pshape({2, 4, 6, 6}, {}, 1, 2), pshape({8, 4, 3, 3}, {2, 1, 1, 1})}, kConv);
  EXPECT_EQ(out_channels, pshape({2, 8, 6, 6}, {1, 2, 1, 1}));
  auto in_channels = infer1("conv2d", {pshape({2, 4, 6, 6}, {1, 2, 1, 1}), pshape({8, 4, 3, 3}, {1, 2, 1, 1})}, kConv);
  EXPECT_EQ(in_channels, pshape({2, 8, 6, 6}, {}, 2));
}

TEST(ParallelRules, Conv2dSpatialSplitAndActivatedPartialSumsRejected) {
  EXPECT_THROW(infer("conv2d", {pshape({2, 4, 6, 6}, {1, 1, 2, 1}), pshape({8, 4, 3, 3}, {}, 1, 2)}, kConv), LoomError);
  EXPECT_THROW(infer("conv2d", {pshape({2, 4, 6, 6}, {1, 1, 1, 2}), pshape({8, 4, 3, 3}, {}, 1, 2)}, kConv), LoomError);
  // With a fused activation the in-channel partial sums cannot be formed.
  pcg::AttrMap relu = kConv;
  relu["act"] = 1;
  EXPECT_THROW(infer("conv2d", {pshape({2, 4, 6, 6}, {1, 2, 1, 1}), pshape({8, 4, 3, 3}, {1, 2, 1, 1})}, relu), LoomError);
  EXPECT_EQ(infer1("conv2d", {pshape({2, 4, 6, 6}, {2, 1, 1, 1}), pshape({8, 4, 3, 3}, {}, 1, 2)}, relu),
            pshape({2, 8, 6, 6}, {2, 1, 1, 1}));
}

TEST(ParallelRules, PoolingSplitsChannelsNotSpace) {
  pcg::AttrMap a{{"kh", 2}, {"kw", 2}, {"stride", 2}, {"pad", 0}};
  EXPECT_EQ(infer1("pool2d_max", {pshape({2, 4, 6, 6}, {2, 2, 1, 1})}, a), pshape({2, 4, 3, 3}, {2, 2, 1, 1}));
  EXPECT_THROW(infer("pool2d_max", {pshape({2, 4, 6, 6}, {1, 1, 2, 1})}, a), LoomError);
  EXPECT_THROW(infer("pool2d_max", {pshape({2, 4, 6, 6}, {}, 2)}, a), LoomError);                  // max of partial sums
  EXPECT_EQ(infer1("pool2d_avg", {pshape({2, 4, 6, 6}, {}, 2)}, a), pshape({2, 4, 3, 3}, {}, 2));  // linear
}

// ---- shape operators -----------------------------------------------------------------------------

TEST(ParallelRules, ConcatSplitsOnlyOffTheConcatAxis) {
  EXPECT_EQ(infer1("concat", {pshape({4, 3}, {2, 1}), pshape({4, 5}, {2, 1})}, {{"axis", 1}}), pshape({4, 8}, {2, 1}));
  EXPECT_EQ(infer1("concat", {pshape({3, 4, 2}, {1, 1, 2}), pshape({5, 4, 2}, {1, 1, 2})}, {{"axis", 0}}), pshape({8, 4, 2}, {1, 1, 2}));
  EXPECT_THROW(infer("concat", {pshape({4, 4}, {1, 2}), pshape({4, 4}, {1, 2})}, {{"axis", 1}}), LoomError);
  EXPECT_THROW(infer("concat", {pshape({4, 4}, {1, 2}), pshape({4, 4}, {}, 1, 2)}, {{"axis", 1}}), LoomError);
  EXPECT_THROW(infer("concat", {pshape({4, 4}, {2, 1}), pshape({2, 4}, {2, 1})}, {{"axis", 0}}), LoomError);
}

TEST(ParallelRules, TransposeMovesTheSplit) {
  EXPECT_EQ(infer1("transpose", {pshape({4, 6}, {2, 1})}), pshape({6, 4}, {1, 2}));
  EXPECT_EQ(infer1("transpose", {pshape({2, 4, 6}, {2, 1, 3})}), pshape({2, 6, 4}, {2, 3, 1}));
}

TEST(ParallelRules, ReductionsAndNormalizations) {
  EXPECT_EQ(infer1("reduce_sum", {pshape({4, 6}, {2, 1})}), pshape({4}, {2}));
  EXPECT_EQ(infer1("reduce_sum", {pshape({4, 6}, {1, 2})}), pshape({4}, {}, 2));
  EXPECT_EQ(infer1("reduce_mean", {pshape({4, 6}, {1, 2})}), pshape({4}, {}, 2));
  EXPECT_EQ(infer1("softmax", {pshape({4, 6}, {2, 1})}), pshape({4, 6}, {2, 1}));
  EXPECT_THROW(infer("softmax", {pshape({4, 6}, {1, 2})}), LoomError);
  EXPECT_THROW(infer("layer_norm", {pshape({4, 6}, {1, 2}), pshape({6}, {2}), pshape({6}, {2})}), LoomError);
  EXPECT_EQ(infer1("layer_norm", {pshape({4, 6}, {2, 1}), pshape({6}, {}, 1, 2), pshape({6}, {}, 1, 2)}), pshape({4, 6}, {2, 1}));
}

TEST(ParallelRules, EmbeddingBatchColumnAndTableRows) {
  EXPECT_EQ(infer1("embedding", {pshape({6}, {2}), pshape({10, 4}, {}, 1, 2)}), pshape({6, 4}, {2, 1}));
  EXPECT_EQ(infer1("embedding", {pshape({6}, {}, 1, 2), pshape({10, 4}, {1, 2})}), pshape({6, 4}, {1, 2}));
  EXPECT_EQ(infer1("embedding", {pshape({6}, {}, 1, 2), pshape({10, 4}, {2, 1})}), pshape({6, 4}, {}, 2));
  EXPECT_EQ(infer1("embedding_bag", {pshape({6, 3}, {}, 1, 2), pshape({10, 4}, {2, 1})}), pshape({6, 4}, {}, 2));
  EXPECT_EQ(infer1("embedding_bag", {pshape({6, 3}, {2, 1}), pshape({10, 4}, {}, 1, 2)}), pshape({6, 4}, {2, 1}));
  // Batch and table rows split over only 2 tasks would need 4 pieces.
  EXPECT_THROW(infer("embedding", {pshape({6}, {2}), pshape({10, 4}, {2, 1})}), LoomError);
}

TEST(ParallelRules, WrongShapesAreRejected) {
  EXPECT_THROW(infer("matmul", {pshape({4, 6}), pshape({5, 8})}), LoomError);
  EXPECT_THROW(infer("matmul", {pshape({4, 6})}), LoomError);
  EXPECT_THROW(infer("no_such_op", {pshape({4, 6})}), LoomError);
}

// OpCatalog::infer promises a LoomError when an op cannot accept its inputs. Shapes that are not
// valid parallel shapes at all (ParallelShape::validate() refuses them) must not be accepted, and
// must not make the derivation read past the end of D (checked in a child process).
TEST(ParallelRules, InvalidInputShapesAreRejected) {
  struct Case {
    std::string what, op;
    pcg::AttrMap attrs;
    std::vector<ParallelShape> inputs;
  };
  ParallelShape short_d = pshape({4, 6});
  short_d.D = {2};
  ParallelShape short_d_matmul = pshape({4, 6});
  short_d_matmul.D = {1};
  const std::vector<Case> cases = {
      {"D[0] = 2 does not divide 3", "matmul", {}, {pshape({3, 6}, {2, 1}), pshape({6, 8}, {}, 1, 2)}},
      {"D[0] = 2 does not divide 3 (relu)", "relu", {}, {pshape({3, 6}, {2, 1})}},
      {"D[0] = 2 does not divide 3 (combine)", "combine", {{"dim", 0}, {"degree", 2}}, {pshape({3, 6}, {2, 1})}},
      {"D of rank 1 for a rank-2 tensor", "relu", {}, {short_d}},
      {"D of rank 1 for a rank-2 tensor (matmul)", "matmul", {}, {short_d_matmul, pshape({6, 8})}},
  };
  for (const auto& c : cases) {
    bool invalid = false;  // premise: at least one input is not a valid parallel shape
    for (const auto& in : c.inputs) {
      try {
        in.validate();
      } catch (const LoomError&) {
        invalid = true;
      }
    }
    EXPECT_TRUE(invalid) << c.what;
    int code = test::run_isolated([&]() -> int {
      try {
        bundled().infer(c.op, c.attrs, c.inputs);
      } catch (const LoomError&) {
        return 0;
      }
      return 1;
    });
    EXPECT_EQ(code, 0) << c.what << ": " << (code == 1 ? "accepted" : test::isolated_outcome(code));
  }
}

// ---- parallel and fused forms ----------------------------------------------------------------------

TEST(ParallelForms, PartitionAndCombine) {
  EXPECT_EQ(infer1("partition", {pshape({4, 6})}, {{"dim", 0}, {"degree", 2}}), pshape({4, 6}, {2, 1}));
  EXPECT_EQ(infer1("partition", {pshape({4, 8})}, {{"dim", 1}, {"degree", 4}}), pshape({4, 8}, {1, 4}));
  // Nested partitions multiply.
  EXPECT_EQ(infer1("partition", {pshape({8, 6}, {2, 1})}, {{"dim", 0}, {"degree", 4}}), pshape({8, 6}, {8, 1}));
  EXPECT_EQ(infer1("combine", {pshape({4, 6}, {2, 1})}, {{"dim", 0}, {"degree", 2}}), pshape({4, 6}));
  EXPECT_EQ(infer1("combine", {pshape({8, 6}, {4, 1})}, {{"dim", 0}, {"degree", 2}}), pshape({8, 6}, {2, 1}));
  // Other degrees are kept.
  EXPECT_EQ(infer1("partition", {pshape({4, 6}, {}, 2, 3)}, {{"dim", 1}, {"degree", 2}}), pshape({4, 6}, {1, 2}, 2, 3));
}

TEST(ParallelForms, PartitionNeedsADivisibleExistingDimension) {
  EXPECT_THROW(infer("partition", {pshape({3, 6})}, {{"dim", 0}, {"degree", 2}}), LoomError);
  EXPECT_THROW(infer("partition", {pshape({4, 6}, {2, 1})}, {{"dim", 0}, {"degree", 4}}), LoomError);  // 4 % 8
  EXPECT_THROW(infer("partition", {pshape({4, 6})}, {{"dim", 2}, {"degree", 2}}), LoomError);          // no such dim
  EXPECT_THROW(infer("partition", {pshape({4, 6})}, {{"dim", 0}, {"degree", 3}}), LoomError);          // outside {2, 4}
  EXPECT_THROW(infer("combine", {pshape({4, 6})}, {{"dim", 0}, {"degree", 2}}), LoomError);            // nothing to combine
  EXPECT_THROW(infer("combine", {pshape({4, 6}, {2, 1})}, {{"dim", 0}, {"degree", 4}}), LoomError);
}

TEST(ParallelForms, ReplicateAndReduce) {
  EXPECT_EQ(infer1("replicate", {pshape({4, 6})}, {{"degree", 2}}), pshape({4, 6}, {}, 1, 2));
  EXPECT_EQ(infer1("replicate", {pshape({4, 6}, {2, 1}, 1, 2)}, {{"degree", 4}}), pshape({4, 6}, {2, 1}, 1, 8));
  EXPECT_EQ(infer1("reduce", {pshape({4, 6}, {}, 2)}, {{"degree", 2}}), pshape({4, 6}));
  EXPECT_EQ(infer1("reduce", {pshape({4, 6}, {}, 4)}, {{"degree", 2}}), pshape({4, 6}, {}, 2));
  // reduce after replicate: there are copies, not partial sums.
  auto replicated = infer("replicate", {pshape({4, 6})}, {{"degree", 2}});
  EXPECT_THROW(infer("reduce", replicated, {{"degree", 2}}), LoomError);
  EXPECT_THROW(infer("reduce", {pshape({4, 6}, {}, 2)}, {{"degree", 4}}), LoomError);
}

TEST(ParallelForms, PipelineAndBatch) {
  ParallelShape staged = pshape({8, 6});
  staged.P = {2, 1};
  EXPECT_EQ(infer1("pipeline", {pshape({8, 6})}, {{"dim", 0}, {"degree", 2}}), staged);
  EXPECT_EQ(infer1("batch", {staged}, {{"dim", 0}, {"degree", 2}}), pshape({8, 6}));
  // Pipelining and partitioning share the dimension.
  EXPECT_EQ(infer1("partition", {staged}, {{"dim", 0}, {"degree", 4}}).D, (Dims{4, 1}));
  EXPECT_THROW(infer("partition", {infer1("partition", {staged}, {{"dim", 0}, {"degree", 4}})}, {{"dim", 0}, {"degree", 2}}), LoomError);
  EXPECT_THROW(infer("batch", {pshape({8, 6})}, {{"dim", 0}, {"degree", 2}}), LoomError);
}

TEST(ParallelForms, FusedFormsEqualTheirCompositions) {
  for (std::int64_t d : {2, 4}) {
    SCOPED_TRACE("degree " + std::to_string(d));
    const pcg::AttrMap deg{{"degree", d}};
    ParallelShape partial = pshape({8, 8}, {}, d);
    auto reduced = infer("reduce", {partial}, deg);
    EXPECT_EQ(infer1("allreduce", {partial}, deg), infer1("replicate", reduced, deg));
    EXPECT_EQ(infer1("allreduce", {partial}, deg), pshape({8, 8}, {}, 1, d));
    EXPECT_EQ(infer1("reduce_scatter", {partial}, {{"dim", 0}, {"degree", d}}), infer1("partition", reduced, {{"dim", 0}, {"degree", d}}));
    ParallelShape cols = pshape({8, 8}, {1, d});
    EXPECT_EQ(infer1("all_gather", {cols}, {{"dim", 1}, {"degree", d}}),
              infer1("replicate", infer("combine", {cols}, {{"dim", 1}, {"degree", d}}), deg));
    ParallelShape rows = pshape({8, 8}, {d, 1});
    EXPECT_EQ(infer1("all_to_all", {rows}, {{"src", 0}, {"dst", 1}, {"degree", d}}), pshape({8, 8}, {1, d}));
  }
  // Ill-typed inside: allreduce of something without partial sums.
  EXPECT_THROW(infer("allreduce", {pshape({8, 8})}, {{"degree", 2}}), LoomError);
  EXPECT_EQ(bundled().input_count("allreduce"), 1u);
  EXPECT_EQ(bundled().output_count("allreduce"), 1u);
}

// ---- summary of the derived rules -----------------------------------------------------------------

TEST(ParallelSummary, MatmulRoles) {
  Program p = bundled().instantiate("matmul", {}, {{4, 6}, {6, 8}});
  ParallelSummary s = summarize_parallelism(p);
  ASSERT_EQ(s.roles.size(), 4u);
  const std::vector<std::pair<std::string, std::size_t>> where = {{"a", 0}, {"a", 1}, {"b", 0}, {"b", 1}};
  const std::vector<DimensionRole::Kind> kinds = {DimensionRole::Free, DimensionRole::Summed, DimensionRole::Summed, DimensionRole::Free};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(s.roles[i].input, where[i].first);
    EXPECT_EQ(s.roles[i].dim, where[i].second);
    EXPECT_EQ(s.roles[i].kind, kinds[i]) << where[i].first << " dim " << where[i].second;
  }
  EXPECT_EQ(s.linear_inputs, (std::vector<std::string>{"a", "b"}));
}

TEST(ParallelSummary, ReluAndConcat) {
  ParallelSummary relu = summarize_parallelism(bundled().instantiate("relu", {}, {{4, 6}}));
  ASSERT_EQ(relu.roles.size(), 2u);
  for (const auto& r : relu.roles) EXPECT_EQ(r.kind, DimensionRole::Free);
  EXPECT_TRUE(relu.linear_inputs.empty());

  ParallelSummary concat = summarize_parallelism(bundled().instantiate("concat", {{"axis", 1}}, {{4, 3}, {4, 5}}));
  ASSERT_EQ(concat.roles.size(), 4u);
  EXPECT_EQ(concat.roles[0].kind, DimensionRole::Free);   // x rows
  EXPECT_EQ(concat.roles[1].kind, DimensionRole::Fixed);  // x concat axis
  EXPECT_EQ(concat.roles[2].kind, DimensionRole::Free);   // y rows
  EXPECT_EQ(concat.roles[3].kind, DimensionRole::Fixed);  // y concat axis
  // Partial sums in x alone would mix with whole values of y: neither input alone may carry V...
  EXPECT_TRUE(concat.linear_inputs.empty());
  // ...but both together may.
  EXPECT_EQ(infer1("concat", {pshape({4, 3}, {}, 2), pshape({4, 5}, {}, 2)}, {{"axis", 1}}), pshape({4, 8}, {}, 2));
  EXPECT_THROW(infer("concat", {pshape({4, 3}, {}, 2), pshape({4, 5}, {}, 1, 2)}, {{"axis", 1}}), LoomError);
}

TEST(ParallelSummary, EmbeddingTableRowsAreSummed) {
  ParallelSummary s = summarize_parallelism(bundled().instantiate("embedding", {}, {{6}, {10, 4}}));
  ASSERT_EQ(s.roles.size(), 3u);
  EXPECT_EQ(s.roles[0].input, "ids");
  EXPECT_EQ(s.roles[0].kind, DimensionRole::Free);
  EXPECT_EQ(s.roles[1].input, "table");
  EXPECT_EQ(s.roles[1].dim, 0u);
  EXPECT_EQ(s.roles[1].kind, DimensionRole::Summed);
  EXPECT_EQ(s.roles[2].kind, DimensionRole::Free);
  // The ids decide which row is taken: partial sums of ids mean nothing.
  EXPECT_EQ(s.linear_inputs, (std::vector<std::string>{"table"}));
}

// ---- cost --------------------------------------------------------------------------------------------

// cost.cpp counts every arithmetic node once and a reduction as extent * (body + 1): a matmul
// element is k multiply-adds, 2k flops.
TEST(Cost, MatmulTotalFlops) {
  for (auto [m, k, n] : std::vector<std::array<std::int64_t, 3>>{{1, 1, 1}, {4, 6, 8}, {3, 5, 7}, {16, 32, 8}}) {
    Program p = bundled().instantiate("matmul", {}, {{m, k}, {k, n}});
    EXPECT_DOUBLE_EQ(total_flops(p), 2.0 * static_cast<double>(m * k * n)) << m << "x" << k << "x" << n;
  }
}

TEST(Cost, OtherOpsTotalFlops) {
  EXPECT_DOUBLE_EQ(total_flops(bundled().instantiate("ewadd", {}, {{3, 4}, {3, 4}})), 12.0);
  EXPECT_DOUBLE_EQ(total_flops(bundled().instantiate("relu", {}, {{2, 5}})), 10.0);
  EXPECT_DOUBLE_EQ(total_flops(bundled().instantiate("transpose", {}, {{3, 4}})), 0.0);
  // conv2d without activation: the resolved select leaves only the sum.
  const std::int64_t N = 2, C = 3, H = 5, W = 5, O = 4, K = 3;
  Program conv = bundled().instantiate("conv2d", {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}},
                                       {{N, C, H, W}, {O, C, K, K}});
  EXPECT_DOUBLE_EQ(total_flops(conv), static_cast<double>(N * O * H * W * C * K * K * 2));
  // softmax: the lets count too. Per row of n: max (n), exp(x - mx) (2n), the row's sum once (n)
  // and the division (n).
  const std::int64_t rows = 3, n = 5;
  EXPECT_DOUBLE_EQ(total_flops(bundled().instantiate("softmax", {}, {{rows, n}})), static_cast<double>(rows * (n + 2 * n + n + n)));
}

TEST(Cost, TheKernelShapeIsReadOffTheHeaviestStatement) {
  using pcg::KernelShape;
  EXPECT_EQ(bundled().task_cost("matmul", {}, {pshape({4, 6}), pshape({6, 8})}).shape, KernelShape::Contraction);
  EXPECT_EQ(bundled().task_cost("linear", {}, {pshape({4, 6}), pshape({6, 8}), pshape({8})}).shape, KernelShape::Contraction);
  EXPECT_EQ(bundled()
                .task_cost("conv2d", {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}},
                           {pshape({2, 3, 5, 5}), pshape({4, 3, 3, 3})})
                .shape,
            KernelShape::Convolution);
  EXPECT_EQ(bundled().task_cost("pool2d_max", {{"kh", 3}, {"kw", 3}, {"stride", 1}, {"pad", 0}}, {pshape({2, 3, 8, 8})}).shape,
            KernelShape::Reduction);
  EXPECT_EQ(bundled().task_cost("relu", {}, {pshape({4, 6})}).shape, KernelShape::Elementwise);
  // A function evaluated by a series per element makes an elementwise loop transcendental.
  for (const char* op : {"gelu", "sigmoid", "tanh", "erf", "exp"})
    EXPECT_EQ(bundled().task_cost(op, {}, {pshape({4, 6})}).shape, KernelShape::Transcendental) << op;
  // Softmax's row sum, counted once per row, still makes its loops a reduction's.
  EXPECT_EQ(bundled().task_cost("softmax", {}, {pshape({4, 6})}).shape, KernelShape::Reduction);
  // Computed indices that slide no window (an output index split in two): still a contraction.
  EXPECT_EQ(bundled().task_cost("outer_product_mean", {}, {pshape({2, 3, 4, 2}), pshape({2, 3, 5, 2})}).shape, KernelShape::Contraction);
  EXPECT_EQ(bundled().task_cost("ewadd", {}, {pshape({4, 6}), pshape({4, 6})}).shape, KernelShape::Elementwise);
  // A user's operator is classified from its own comprehension: a sum of products of two values
  // is a contraction, at a computed index a convolution; a sum of squares is a reduction.
  const Library user = Library::from_text(R"(
op sum_squares(x: [m, n]) -> [m] { out[i] = sum(j) (x[i, j] * x[i, j] + 1); }
op dot_rows(x: [m, n], y: [m, n]) -> [m] { out[i] = sum(j) (x[i, j] * y[i, j]); }
op shifted_dot(x: [m, n], w: [k]) -> [m, n - k + 1] { out[i, j] = sum(p) (x[i, j + p] * w[p]); }
op scale(x: [m, n]) -> [m, n] { out[i, j] = 2 * x[i, j]; }
op clip(x: [m, n]) -> [m, n] { out[i, j] = max(min(x[i, j], 1), -1); }
op norm2(x: [m, n], y: [m, n]) -> [m, n] { out[i, j] = sqrt(x[i, j] * x[i, j] + y[i, j] * y[i, j]); }
op softplus(x: [m, n]) -> [m, n] { out[i, j] = log(1 + exp(x[i, j])); }
)");
  EXPECT_EQ(user.task_cost("dot_rows", {}, {pshape({4, 6}), pshape({4, 6})}).shape, KernelShape::Contraction);
  EXPECT_EQ(user.task_cost("shifted_dot", {}, {pshape({4, 6}), pshape({3})}).shape, KernelShape::Convolution);
  EXPECT_EQ(user.task_cost("scale", {}, {pshape({4, 6})}).shape, KernelShape::Elementwise);
  EXPECT_EQ(user.task_cost("clip", {}, {pshape({4, 6})}).shape, KernelShape::Elementwise);  // max and min: one instruction each
  EXPECT_EQ(user.task_cost("norm2", {}, {pshape({4, 6}), pshape({4, 6})}).shape, KernelShape::Elementwise);
  EXPECT_EQ(user.task_cost("softplus", {}, {pshape({4, 6})}).shape, KernelShape::Transcendental);
  EXPECT_EQ(user.task_cost("sum_squares", {}, {pshape({4, 6})}).shape, KernelShape::Reduction);  // a square, not a product of two values
}

TEST(Cost, TaskCostSplitsFlopsAndShards) {
  const double m = 4, k = 6, n = 8, total = 2 * m * k * n;
  auto whole = bundled().task_cost("matmul", {}, {pshape({4, 6}), pshape({6, 8})});
  EXPECT_DOUBLE_EQ(whole.flops, total);
  EXPECT_DOUBLE_EQ(whole.bytes_read, (m * k + k * n) * 4);
  EXPECT_DOUBLE_EQ(whole.bytes_written, m * n * 4);

  auto data = bundled().task_cost("matmul", {}, {pshape({4, 6}, {2, 1}), pshape({6, 8}, {}, 1, 2)});
  EXPECT_DOUBLE_EQ(data.flops, whole.flops / 2);
  EXPECT_DOUBLE_EQ(data.bytes_read, (m / 2 * k + k * n) * 4);
  EXPECT_DOUBLE_EQ(data.bytes_written, m / 2 * n * 4);

  auto reduction = bundled().task_cost("matmul", {}, {pshape({4, 6}, {1, 2}), pshape({6, 8}, {2, 1})});
  EXPECT_DOUBLE_EQ(reduction.flops, whole.flops / 2);
  EXPECT_DOUBLE_EQ(reduction.bytes_read, (m * k / 2 + k / 2 * n) * 4);
  EXPECT_DOUBLE_EQ(reduction.bytes_written, m * n * 4);  // each task writes a whole partial sum

  auto four = bundled().task_cost("matmul", {}, {pshape({4, 6}, {2, 1}, 1, 2), pshape({6, 8}, {1, 2}, 1, 2)});
  EXPECT_DOUBLE_EQ(four.flops, whole.flops / 4);

  // Replicas do not divide the work: every copy computes it.
  auto replicated = bundled().task_cost("matmul", {}, {pshape({4, 6}, {}, 1, 2), pshape({6, 8}, {}, 1, 2)});
  EXPECT_DOUBLE_EQ(replicated.flops, whole.flops);

  // Parallel forms compute nothing and move their shard.
  auto part = bundled().task_cost("partition", {{"dim", 0}, {"degree", 2}}, {pshape({4, 6})});
  EXPECT_DOUBLE_EQ(part.flops, 0);
  EXPECT_DOUBLE_EQ(part.bytes_read, 4 * 6 * 4);
  EXPECT_DOUBLE_EQ(part.bytes_written, 2 * 6 * 4);

  EXPECT_THROW(bundled().task_cost("relu", {}, {pshape({4, 6}, {}, 2)}), LoomError);
}

}  // namespace
}  // namespace loom::spec

namespace loom::spec {

namespace {

// A gated linear unit, written with `let` intermediates and inlined.
const Library& glu_library() {
  static const Library lib = Library::from_text(
      "op glu_let(x: [m, k], w: [k, n], v: [k, n]) -> [m, n] {\n"
      "  let a[i, j] = sum(p) (x[i, p] * w[p, j]);\n"
      "  let b[i, j] = sum(p) (x[i, p] * v[p, j]);\n"
      "  out[i, j] = a[i, j] * sigmoid(b[i, j]);\n"
      "}\n"
      "op glu_inline(x: [m, k], w: [k, n], v: [k, n]) -> [m, n] {\n"
      "  out[i, j] = (sum(p) (x[i, p] * w[p, j])) * sigmoid(sum(p) (x[i, p] * v[p, j]));\n"
      "}\n");
  return lib;
}

}  // namespace

TEST(ParallelSummary, LetIntermediatesSplitAsTheSameBodyInlined) {
  const auto with_let = summarize_parallelism(glu_library().instantiate("glu_let", {}, {{4, 6}, {6, 8}, {6, 8}}));
  const auto inlined = summarize_parallelism(glu_library().instantiate("glu_inline", {}, {{4, 6}, {6, 8}, {6, 8}}));
  ASSERT_EQ(with_let.roles.size(), inlined.roles.size());
  for (std::size_t i = 0; i < with_let.roles.size(); ++i)
    EXPECT_EQ(with_let.roles[i].kind, inlined.roles[i].kind) << with_let.roles[i].input << " dim " << with_let.roles[i].dim;
  // Splitting w's columns splits v's and the output's with them (model parallelism).
  ASSERT_EQ(with_let.roles[3].input, "w");
  EXPECT_EQ(with_let.roles[3].dim, 1u);
  EXPECT_EQ(with_let.roles[3].kind, DimensionRole::Free);
  const auto shapes = split_inputs(glu_library().instantiate("glu_let", {}, {{4, 6}, {6, 8}, {6, 8}}), 1, 1, 2);
  EXPECT_EQ(shapes[2].D, (std::vector<std::int64_t>{1, 2})) << "v is split with w";
  EXPECT_EQ(shapes[0].R, 2) << "x is replicated";
}

}  // namespace loom::spec
