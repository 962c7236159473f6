#pragma once
// One training iteration of a plan as the simulator runs it: pipelined when the plan is, with what
// a schedule adds. An order puts every forward task of one operator after every forward task of
// another, micro-batch by micro-batch; a recomputed operator's forward runs again on each of its
// devices just before its backward, and its outputs are not kept between the passes.
#include <vector>

#include "loom/pcg/op_catalog.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/plan.hpp"
#include "loom/search/plan_cost.hpp"
#include "loom/search/simulator.hpp"
#include "loom/search/task_graph.hpp"

namespace loom::search {

TaskGraph plan_task_graph(const Plan& plan, const CostModel& model, const pcg::OpCatalog& catalog);

// Bytes per device (pipeline_memory, less what recomputation drops); `activations_only`: only what
// the passes make, as the runtime's measured activation peak counts it.
std::vector<double> plan_device_memory(const Plan& plan, const CostModel& model, const pcg::OpCatalog& catalog,
                                       bool activations_only = false);

// One point of a device's memory over an iteration: from `seconds` on, it holds `bytes`.
struct MemoryPoint {
  double seconds = 0;
  double bytes = 0;
};

// Per device, its memory over one training iteration: the memory model's walk (plan_device_memory,
// MemoryOptions::trace), each step placed on that device's time in `timeline` (simulated from
// `tasks`, plan_task_graph's): a forward step when the node's first task there finishes (a
// pipeline's first micro-batch), a backward step when its first backward task there starts (a
// transfer counts on both its devices); a step whose node has no task there, or that would go back
// in time, keeps the time of the step before. Points at one time follow the walk's order. The most of each device's points is
// plan_device_memory's.
std::vector<std::vector<MemoryPoint>> plan_memory_over_time(const Plan& plan, const CostModel& model, const pcg::OpCatalog& catalog,
                                                            const TaskGraph& tasks, const Timeline& timeline);

PlanCost simulated_plan_cost(const Plan& plan, const CostModel& model, const pcg::OpCatalog& catalog);

}  // namespace loom::search
