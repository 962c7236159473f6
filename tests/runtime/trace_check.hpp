#pragma once
// Checks of a traced training step (TrainReport::trace) against the plan's simulated tasks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <string>

#include "loom/runtime/trainer.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/task_graph.hpp"
#include "training_check.hpp"

namespace loom::runtime::sharded_test {

// The spans of row `row`, by lane, in time order.
inline std::vector<search::TraceSpan> spans_of(const std::vector<search::TraceSpan>& trace, int row, search::TraceLane lane) {
  std::vector<search::TraceSpan> out;
  for (const search::TraceSpan& s : trace)
    if (s.device == row && s.lane == lane) out.push_back(s);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  return out;
}

// An operator task's label, forward or backward, in a pipeline's micro-batch or not:
// "matmul#4[1]", "mb1 matmul#4[1] (backward)".
inline bool is_operator_task(const std::string& label) {
  static const std::regex task(R"(^(mb[0-9]+ )?[A-Za-z_0-9]+#[0-9]+\[[0-9]+\]( \(backward\))?$)");
  return std::regex_match(label, task);
}

// `report` traced one step on `processes` processes of a plan whose simulated tasks are `tasks`:
// every operator task the simulator runs, forward and backward, was traced once under the
// simulator's label on the row of the process that runs its device (row 0 when one process runs
// them all); each process's compute spans follow one another within the step (`step_seconds`, as
// the trainer timed it), and each took `losses` losses and one optimizer step, its last span.
inline void expect_trace_runs_the_tasks(const search::TaskGraph& tasks, const TrainReport& report, int processes, double step_seconds,
                                        int losses = 1) {
  ASSERT_FALSE(report.trace.empty());
  std::map<std::string, int> simulated;  // operator task label -> device
  for (std::size_t i = 0; i < tasks.tasks.size(); ++i)
    if (tasks.tasks[i].kind == search::TaskKind::Compute && is_operator_task(tasks.label_of(i)))
      simulated.emplace(tasks.label_of(i), tasks.tasks[i].device);
  ASSERT_FALSE(simulated.empty());
  std::map<std::string, int> traced;  // operator task label -> row
  for (const search::TraceSpan& s : report.trace) {
    EXPECT_GE(s.device, 0);
    EXPECT_LT(s.device, processes);
    EXPECT_GE(s.start, 0) << s.name;
    EXPECT_GE(s.seconds, 0) << s.name;
    EXPECT_LE(s.start + s.seconds, step_seconds) << s.name << " ends after the traced step";
    if (s.lane == search::TraceLane::Compute && is_operator_task(s.name)) {
      EXPECT_TRUE(traced.emplace(s.name, s.device).second) << s.name << " traced twice";
    }
  }
  for (const auto& [label, device] : simulated) {
    SCOPED_TRACE(label);
    auto it = traced.find(label);
    ASSERT_NE(it, traced.end()) << "simulated but not traced";
    EXPECT_EQ(it->second, processes == 1 ? 0 : device);
  }
  for (const auto& [label, row] : traced) EXPECT_TRUE(simulated.count(label)) << label << " traced but not simulated";
  for (int row = 0; row < processes; ++row) {
    SCOPED_TRACE("row " + std::to_string(row));
    const std::vector<search::TraceSpan> compute = spans_of(report.trace, row, search::TraceLane::Compute);
    for (std::size_t i = 1; i < compute.size(); ++i)
      EXPECT_LE(compute[i - 1].start + compute[i - 1].seconds, compute[i].start + 1e-9)
          << compute[i - 1].name << " overlaps " << compute[i].name;
    EXPECT_EQ(std::count_if(compute.begin(), compute.end(), [](const auto& s) { return s.kind == "loss"; }), losses);
    EXPECT_EQ(std::count_if(compute.begin(), compute.end(), [](const auto& s) { return s.kind == "update"; }), 1);
    ASSERT_FALSE(compute.empty());
    EXPECT_EQ(compute.back().name, "optimizer step");
  }
}

// The same for a plan without a pipeline, simulated on `devices` devices.
inline void expect_trace_runs_the_simulated_tasks(const pcg::Graph& plan, const TrainReport& report, int processes, int devices,
                                                  double step_seconds) {
  expect_trace_runs_the_tasks(search::build_task_graph(plan, search::CostModel(library(), machine_of(devices))), report, processes,
                              step_seconds);
}

// Trains `plan` with `s`, giving the report and the seconds the trainer timed each step.
inline std::pair<TrainReport, std::vector<double>> timed_run(const pcg::Graph& plan, const TrainSettings& s,
                                                             Transport* transport = nullptr) {
  std::vector<double> seconds;
  TrainReport report = train<double>(
      library(), plan, s, [&](const StepReport& r) { seconds.push_back(r.seconds); }, transport);
  return {std::move(report), std::move(seconds)};
}

}  // namespace loom::runtime::sharded_test
