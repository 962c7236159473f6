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
#include "loom/search/task_graph.hpp"

namespace loom::search {

TaskGraph plan_task_graph(const Plan& plan, const CostModel& model, const pcg::OpCatalog& catalog);

// Bytes per device (pipeline_memory, less what recomputation drops); `activations_only`: only what
// the passes make, as the runtime's measured activation peak counts it.
std::vector<double> plan_device_memory(const Plan& plan, const CostModel& model, const pcg::OpCatalog& catalog,
                                       bool activations_only = false);

PlanCost simulated_plan_cost(const Plan& plan, const CostModel& model, const pcg::OpCatalog& catalog);

}  // namespace loom::search
