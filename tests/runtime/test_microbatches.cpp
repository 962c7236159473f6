// A pipelined step's pieces: the batch's rows of each micro-batch, and the order in which each
// process runs the passes.
#include <gtest/gtest.h>

#include "loom/runtime/microbatches.hpp"
#include "loom/search/pipeline_order.hpp"
#include "training_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

TEST(Microbatches, AreConsecutiveRowsOfTheBatch) {
  Tensor<double> batch({4, 2});
  for (std::size_t i = 0; i < batch.data.size(); ++i) batch.data[i] = static_cast<double>(i);
  const Tensor<double> second = batch_rows(batch, 1, 2);
  EXPECT_EQ(second.dims, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(second.data, (std::vector<double>{4, 5, 6, 7}));
  EXPECT_EQ(batch_rows(batch, 3, 4).data, (std::vector<double>{6, 7}));
  try {
    batch_rows(batch, 0, 3);
    ADD_FAILURE() << "a batch of 4 was cut into 3";
  } catch (const LoomError& e) {
    EXPECT_STREQ(e.what(), "a batch of 4 does not divide into 3 micro-batches");
  }
}

TEST(Microbatches, EachProcessRunsItsStagesOrderUnlessAnOperatorSpansStages) {
  const search::Pipeline pipeline{2, 3, search::PipelineOrder::OneFOneB};
  pcg::Graph plan = pipelined_plan(small_mlp(), 4, 2);
  const auto first = search::stage_steps(pipeline.order, 0, 2, 3);
  const auto second = search::stage_steps(pipeline.order, 1, 2, 3);
  ASSERT_NE(first, second);
  EXPECT_EQ(process_passes(plan, pipeline, 1, 4, 4), first);
  EXPECT_EQ(process_passes(plan, pipeline, 2, 4, 4), second);
  EXPECT_EQ(process_passes(plan, pipeline, 0, 1, 4), first);  // one process runs every stage
  EXPECT_EQ(process_passes(plan, pipeline, 2, 4, 4, true), first);
  EXPECT_THROW(process_passes(plan, {3, 3, search::PipelineOrder::OneFOneB}, 2, 4, 4), LoomError);
  // An operator with a piece in each stage, as an interlaced pipeline's shared embedding has.
  for (const pcg::Node& n : plan.nodes())
    if (search::is_compute_node(library(), n) && n.view_or_default().tasks() == 2) {
      plan.set_view(n.id, pcg::MachineView{{0, 2}});
      break;
    }
  EXPECT_EQ(process_passes(plan, pipeline, 2, 4, 4), first);
}

}  // namespace
}  // namespace loom::runtime
