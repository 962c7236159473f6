// The correctness suite in one process: every device's tasks run here, values still moving
// between tasks as the plan says.
#include "training_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

class ShardedTraining : public ::testing::TestWithParam<PlanKind> {};

TEST_P(ShardedTraining, FollowsTheSingleProcessRunInDouble) {
  LocalTransport local;
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name + ", " + plan_name(GetParam()));
    expect_training_matches<double>(model, plan_graph(GetParam(), model.graph, 4), 4, local, 1e-9);
  }
}

INSTANTIATE_TEST_SUITE_P(Plans, ShardedTraining, all_plan_kinds, plan_test_name);

TEST(ShardedTraining, FloatFollowsTheSingleProcessRun) {
  LocalTransport local;
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name);
    expect_training_matches<float>(model, plan_graph(PlanKind::Megatron, model.graph, 2), 2, local, 1e-4);
  }
}

// A pipelined plan runs each step's batch as micro-batches, in 1F1B's or GPipe's order, and its
// losses and weights are the whole batch's.
TEST(ShardedTraining, PipelinedPlansFollowTheSingleProcessRun) {
  LocalTransport local;
  for (const SuiteModel& model : suite_models())
    for (search::PipelineOrder order : {search::PipelineOrder::OneFOneB, search::PipelineOrder::GPipe}) {
      SCOPED_TRACE(model.name + (order == search::PipelineOrder::GPipe ? ", GPipe" : ", 1F1B"));
      const int stages = pipeline_stages_for(model.graph, 4, 2);
      expect_training_matches<double>(model, pipelined_plan(model.graph, 4, stages), 4, local, 1e-9, 10, Backend::Cpu, nullptr,
                                      search::Pipeline{stages, 2, order});
    }
}

// The lookups and LM head sharing GPT-3's embedding table, interlaced across the stages.
TEST(ShardedTraining, AnInterlacedPipelineFollowsTheSingleProcessRun) {
  LocalTransport local;
  const SuiteModel model = tied_gpt3();
  const search::PipelineResult r = interlaced_pipeline(model.graph, 4);
  ASSERT_TRUE(r.interlaced) << r.none_because;
  expect_training_matches<double>(model, r.plan, 4, local, 1e-9, 10, Backend::Cpu, nullptr, r.pipeline);
}

// In one process the first stage's order runs: 1F1B keeps two of the four micro-batches' values at
// once, GPipe all four, and one micro-batch at a time (a pipeline of one stage) fewer still.
TEST(ShardedTraining, OneFOneBHoldsFewerMicroBatchesThanGPipe) {
  const SuiteModel model = suite_models().front();
  const pcg::Graph plan = pipelined_plan(model.graph, 2, 2);
  const auto peak = [&](search::Pipeline pipeline) {
    TrainSettings s;
    s.steps = 2;
    s.run_name = model.name;
    s.plan_devices = 2;
    s.pipeline = pipeline;
    const TrainReport report = train<double>(library(), plan, s);
    return report.peak_activation_bytes;
  };
  const std::size_t gpipe = peak({2, 4, search::PipelineOrder::GPipe});
  const std::size_t one_f_one_b = peak({2, 4, search::PipelineOrder::OneFOneB});
  const std::size_t one_at_a_time = peak({1, 4, search::PipelineOrder::OneFOneB});
  const std::size_t whole = peak({});
  const std::string figures = "GPipe " + std::to_string(gpipe) + " B, 1F1B " + std::to_string(one_f_one_b) + " B, one at a time " +
                              std::to_string(one_at_a_time) + " B, the whole batch " + std::to_string(whole) + " B";
  EXPECT_LT(one_f_one_b, gpipe) << figures;
  EXPECT_LT(one_at_a_time, one_f_one_b) << figures;
  EXPECT_LT(gpipe, 2 * whole) << figures;
  EXPECT_GT(gpipe, whole / 2) << figures;
}

// The plans differ from the model: the suite would prove nothing if every plan were the model.
TEST(ShardedTraining, EveryPlanSplitsSomething) {
  for (const SuiteModel& model : suite_models())
    for (PlanKind kind : {PlanKind::DataParallel, PlanKind::Reduction}) {
      const pcg::Graph plan = plan_graph(kind, model.graph, 4);
      EXPECT_GT(plan.size(), model.graph.size()) << model.name << ", " << plan_name(kind);
    }
}

}  // namespace
}  // namespace loom::runtime
