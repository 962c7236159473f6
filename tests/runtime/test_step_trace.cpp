// A training step traced span by span in one process (loom train --trace).
#include <filesystem>
#include <set>

#include "loom/pcg/diagnostic.hpp"
#include "trace_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

TrainSettings traced_settings(std::int64_t steps, std::int64_t trace_step, int devices) {
  TrainSettings s;
  s.steps = steps;
  s.trace_step = trace_step;
  s.plan_devices = devices;
  return s;
}

TEST(StepTrace, OneProcessTracesEveryDevicesTasksAsTheSimulatorLabelsThem) {
  for (PlanKind kind : {PlanKind::DataParallel, PlanKind::Megatron}) {
    for (const SuiteModel& model : suite_models()) {
      SCOPED_TRACE(model.name + ", " + plan_name(kind));
      const pcg::Graph plan = plan_graph(kind, model.graph, 2);
      LocalTransport local;
      const TrainReport report = train<double>(library(), plan, traced_settings(3, 2, 2), {}, &local);
      expect_trace_runs_the_simulated_tasks(plan, report, 1, 2);
    }
  }
}

TEST(StepTrace, NoTraceIsRecordedUnlessAsked) {
  const pcg::Graph plan = plan_graph(PlanKind::DataParallel, suite_models().front().graph, 2);
  const TrainReport report = train<double>(library(), plan, traced_settings(2, 0, 2));
  EXPECT_TRUE(report.trace.empty());
}

TEST(StepTrace, TheTracedOperatorsTakeTheTimeTheRunMeasuresOfThem) {
  // Warm-up 1 of 2 steps: the operator times are the traced step's alone.
  const pcg::Graph plan = plan_graph(PlanKind::Megatron, suite_models().at(1).graph, 2);
  TrainSettings s = traced_settings(2, 2, 2);
  s.warmup_steps = 1;
  const TrainReport report = train<double>(library(), plan, s);
  std::map<int, double> forward, backward;
  for (const search::TraceSpan& span : report.trace)
    if (span.lane == search::TraceLane::Compute && is_operator_task(span.name))
      (span.kind == "backward" ? backward : forward)[span.node.value()] += span.seconds;
  ASSERT_FALSE(forward.empty());
  for (const auto& [node, seconds] : forward) {
    const OperatorTime& t = report.operator_times.at(static_cast<std::size_t>(node));
    EXPECT_NEAR(seconds, t.forward_seconds, 0.05 * t.forward_seconds + 2e-6) << plan.node(node).describe();
  }
  for (const auto& [node, seconds] : backward) {
    const OperatorTime& t = report.operator_times.at(static_cast<std::size_t>(node));
    EXPECT_NEAR(seconds, t.backward_seconds, 0.05 * t.backward_seconds + 2e-6) << plan.node(node).describe();
  }
}

TEST(StepTrace, APipelinesSpansNameTheirMicroBatch) {
  const SuiteModel model = suite_models().front();
  const int stages = pipeline_stages_for(model.graph, 4, 2);
  TrainSettings s = traced_settings(2, 2, 4);
  const pcg::Graph plan = pipelined_plan(model.graph, 4, stages);
  s.pipeline = {stages, 2, search::PipelineOrder::OneFOneB};
  const TrainReport report = train<double>(library(), plan, s);
  std::set<std::string> microbatches;
  int losses = 0;
  for (const search::TraceSpan& span : report.trace) {
    if (span.kind == "loss") ++losses;
    if (span.lane == search::TraceLane::Compute && span.kind == "forward") microbatches.insert(span.name.substr(0, span.name.find(' ')));
  }
  EXPECT_EQ(microbatches, (std::set<std::string>{"mb0", "mb1"}));
  EXPECT_EQ(losses, 2);
}

TEST(StepTrace, AStepOutsideTheRunIsRefusedBeforeTraining) {
  const pcg::Graph plan = plan_graph(PlanKind::DataParallel, suite_models().front().graph, 2);
  const std::string checkpoint = (std::filesystem::temp_directory_path() / "loom-trace-refused.ckpt").string();
  std::filesystem::remove(checkpoint);
  TrainSettings s = traced_settings(3, 4, 2);
  s.checkpoint = checkpoint;
  try {
    train<double>(library(), plan, s);
    FAIL() << "traced a step the run does not take";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("the step to trace, 4, is not among the steps this run takes (1 to 3)"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(checkpoint));
}

}  // namespace
}  // namespace loom::runtime
