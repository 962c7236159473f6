// A training step traced span by span in one process (loom train --trace).
#include <filesystem>
#include <set>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/checkpoint.hpp"
#include "loom/search/pipeline.hpp"
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
      // A step before the last: its spans end within its own time.
      const auto [report, seconds] = timed_run(plan, traced_settings(3, 2, 2));
      expect_trace_runs_the_simulated_tasks(plan, report, 1, 2, seconds.at(1));
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
  ASSERT_FALSE(backward.empty());
  for (const auto& [node, seconds] : forward) {
    const OperatorTime& t = report.operator_times.at(static_cast<std::size_t>(node));
    EXPECT_NEAR(seconds, t.forward_seconds, 0.05 * t.forward_seconds + 2e-6) << plan.node(node).describe();
  }
  for (const auto& [node, seconds] : backward) {
    const OperatorTime& t = report.operator_times.at(static_cast<std::size_t>(node));
    EXPECT_NEAR(seconds, t.backward_seconds, 0.05 * t.backward_seconds + 2e-6) << plan.node(node).describe();
  }
}

TEST(StepTrace, APipelinesSpansAreItsMicroBatchesTasks) {
  const SuiteModel model = suite_models().front();
  const int stages = pipeline_stages_for(model.graph, 4, 2);
  TrainSettings s = traced_settings(2, 2, 4);
  const pcg::Graph plan = pipelined_plan(model.graph, 4, stages);
  s.pipeline = {stages, 2, search::PipelineOrder::OneFOneB};
  const auto [report, seconds] = timed_run(plan, s);
  const search::TaskGraph tasks =
      search::build_pipeline_task_graph(plan, search::CostModel(library(), machine_of(4)), s.pipeline, library());
  expect_trace_runs_the_tasks(tasks, report, 1, seconds.at(1), 2);
  int added_up = 0;
  for (const search::TraceSpan& span : report.trace) added_up += span.name == "gradients added up";
  EXPECT_EQ(added_up, 2);
}

TEST(StepTrace, RecomputedTasksAreTracedAsRecomputedInTheBackwardPass) {
  const SuiteModel model = suite_models().at(1);
  const pcg::Graph plan = plan_graph(PlanKind::Megatron, model.graph, 2);
  TrainSettings s = traced_settings(2, 2, 2);
  for (const pcg::Node& n : plan.nodes())
    if (n.op == "gelu" || n.op == "softmax") s.recompute.push_back(n.id);
  ASSERT_FALSE(s.recompute.empty());
  const auto [report, seconds] = timed_run(plan, s);
  expect_trace_runs_the_simulated_tasks(plan, report, 1, 2, seconds.at(1));
  double first_backward = seconds.at(1);
  std::set<std::string> recomputed;
  for (const search::TraceSpan& span : report.trace) {
    if (span.kind == "backward") first_backward = std::min(first_backward, span.start);
    if (span.kind == "recompute") recomputed.insert(span.name);
  }
  std::set<std::string> dropped;
  for (pcg::NodeId id : s.recompute)
    for (std::int64_t t = 0; t < plan.node(id).tasks(); ++t) dropped.insert("recompute " + search::task_label(plan.node(id), t));
  // The dropped operators' tasks, and the layout changes made of them (dropped with them), whole.
  for (const std::string& task : dropped) EXPECT_TRUE(recomputed.count(task)) << task << " not recomputed";
  for (const std::string& name : recomputed)
    EXPECT_TRUE(dropped.count(name) || name.find('[') == std::string::npos) << name << " recomputed but not dropped";
  EXPECT_GT(recomputed.size(), dropped.size());
  for (const search::TraceSpan& span : report.trace) {
    if (span.kind == "recompute") {
      EXPECT_GE(span.start, first_backward) << span.name << " before the backward pass";
    }
  }
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

TEST(StepTrace, AResumedRunTracesOnlyTheStepsItTakes) {
  const pcg::Graph plan = plan_graph(PlanKind::DataParallel, suite_models().front().graph, 2);
  const std::string checkpoint = (std::filesystem::temp_directory_path() / "loom-trace-resume.ckpt").string();
  TrainSettings first = traced_settings(2, 0, 2);
  first.checkpoint = checkpoint;
  train<double>(library(), plan, first);
  TrainSettings again = traced_settings(4, 2, 2);
  again.resume = checkpoint;
  EXPECT_THROW(
      {
        try {
          train<double>(library(), plan, again);
        } catch (const LoomError& e) {
          EXPECT_NE(std::string(e.what()).find("is not among the steps this run takes (3 to 4)"), std::string::npos) << e.what();
          throw;
        }
      },
      LoomError);
  again.steps = 2;
  again.trace_step = 2;
  EXPECT_THROW(
      {
        try {
          train<double>(library(), plan, again);
        } catch (const LoomError& e) {
          EXPECT_NE(std::string(e.what()).find("no step is left to trace: the run resumes after step 2 of 2"), std::string::npos)
              << e.what();
          throw;
        }
      },
      LoomError);
  again.steps = 4;
  again.trace_step = 3;
  const TrainReport resumed = train<double>(library(), plan, again);
  EXPECT_FALSE(resumed.trace.empty());
  std::filesystem::remove(checkpoint);
}

}  // namespace
}  // namespace loom::runtime
