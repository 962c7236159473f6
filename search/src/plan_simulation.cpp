#include "loom/search/plan_simulation.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "loom/search/memory.hpp"
#include "loom/search/pipeline.hpp"
#include "loom/search/simulator.hpp"

namespace loom::search {
namespace {

bool forward_compute(const SimTask& t) { return t.kind == TaskKind::Compute && !t.backward; }

void impose_order(TaskGraph& tasks, const std::vector<OrderEdge>& order) {
  for (const OrderEdge& e : order) {
    std::map<int, std::vector<int>> before;  // per micro-batch
    for (std::size_t i = 0; i < tasks.tasks.size(); ++i)
      if (forward_compute(tasks.tasks[i]) && tasks.tasks[i].node == e.before)
        before[tasks.tasks[i].microbatch].push_back(static_cast<int>(i));
    for (SimTask& t : tasks.tasks)
      if (forward_compute(t) && t.node == e.after) {
        const auto it = before.find(t.microbatch);
        if (it == before.end()) continue;
        t.deps.insert(t.deps.end(), it->second.begin(), it->second.end());
        t.ordered_after.insert(t.ordered_after.end(), it->second.begin(), it->second.end());
      }
  }
}

void impose_recomputation(TaskGraph& tasks, const std::vector<pcg::NodeId>& recompute) {
  std::map<std::tuple<int, std::int64_t, int>, double> forward;  // (node, task, micro-batch) -> seconds
  for (const SimTask& t : tasks.tasks)
    if (forward_compute(t) && std::find(recompute.begin(), recompute.end(), t.node) != recompute.end())
      forward[{t.node.value(), t.index, t.microbatch}] = t.seconds;
  for (SimTask& t : tasks.tasks) {
    if (t.kind != TaskKind::Compute || !t.backward) continue;
    const auto it = forward.find({t.node.value(), t.index, t.microbatch});
    if (it == forward.end()) continue;
    t.seconds += it->second;
    t.recompute_seconds += it->second;
    t.label = "recompute+" + t.label;
  }
}

}  // namespace

TaskGraph plan_task_graph(const Plan& plan, const CostModel& model, const pcg::OpCatalog& catalog) {
  TaskGraph tasks = plan.pipeline.runs_micro_batches() ? build_pipeline_task_graph(plan.graph, model, plan.pipeline, catalog)
                                                       : build_task_graph(plan.graph, model);
  impose_order(tasks, plan.order);
  impose_recomputation(tasks, plan.recompute);
  return tasks;
}

std::vector<double> plan_device_memory(const Plan& plan, const CostModel& model, const pcg::OpCatalog& catalog, bool activations_only) {
  return pipeline_memory(plan.graph, model, plan.pipeline, catalog, plan.recompute, activations_only);
}

std::vector<std::vector<MemoryPoint>> plan_memory_over_time(const Plan& plan, const CostModel& model, const pcg::OpCatalog& catalog,
                                                            const TaskGraph& tasks, const Timeline& timeline) {
  std::vector<MemoryStep> steps;
  const std::vector<double> peak = pipeline_memory(plan.graph, model, plan.pipeline, catalog, plan.recompute, false, &steps);
  // When each node's step begins on each device: a forward's pieces are kept from when its first
  // task there finishes (a pipeline's first micro-batch), a backward holds its gradients from when
  // its first task there starts. A transfer counts on the device it leaves and the one it reaches.
  std::map<std::tuple<int, bool, int>, double> begins;
  for (std::size_t i = 0; i < tasks.tasks.size() && i < timeline.finish.size(); ++i) {
    const SimTask& t = tasks.tasks[i];
    if (t.kind == TaskKind::Join) continue;
    const double at = t.backward ? timeline.start[i] : timeline.finish[i];
    for (int device : {t.device, t.kind == TaskKind::Communication ? t.peer : -1}) {
      if (device < 0) continue;
      const auto [it, first] = begins.try_emplace({t.node.value(), t.backward, device}, at);
      if (!first) it->second = std::min(it->second, at);
    }
  }
  std::vector<std::vector<MemoryPoint>> out(peak.size());
  for (std::size_t d = 0; d < out.size(); ++d) {
    double now = 0;
    for (const MemoryStep& step : steps) {
      const auto it = begins.find({step.node.value(), step.backward, static_cast<int>(d)});
      if (it != begins.end()) now = std::max(now, it->second);
      const double bytes = step.bytes.at(d);
      if (out[d].empty() || out[d].back().bytes != bytes) out[d].push_back({now, bytes});
    }
  }
  return out;
}

PlanCost simulated_plan_cost(const Plan& plan, const CostModel& model, const pcg::OpCatalog& catalog) {
  PlanCost cost;
  cost.seconds = simulate(plan_task_graph(plan, model, catalog)).makespan;
  const std::vector<double> bytes = plan_device_memory(plan, model, catalog);
  cost.overfull_device = first_overfull_device(bytes, model.machine());
  cost.fullest_bytes = fullest_device_bytes(bytes);
  return cost;
}

}  // namespace loom::search
