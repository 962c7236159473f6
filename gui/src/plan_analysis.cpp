#include "loom/gui/plan_analysis.hpp"

#include "loom/search/memory.hpp"
#include "loom/search/pipeline.hpp"
#include "loom/search/plan_cost.hpp"

namespace loom::gui {

PlanAnalysis analyze_plan(const search::Plan& plan, const spec::Library& library) {
  PlanAnalysis out;
  const search::CostModel model(library, plan.machine);
  if (plan.pipeline.enabled()) {
    out.tasks = search::build_pipeline_task_graph(plan.graph, model, plan.pipeline, library);
    out.memory_bytes = search::pipeline_memory(plan.graph, model, plan.pipeline, library);
  } else {
    out.tasks = search::build_task_graph(plan.graph, model);
    out.memory_bytes = search::plan_memory(plan.graph, model);
  }
  out.timeline = search::simulate(out.tasks);
  out.busy_seconds = out.timeline.busy_seconds(out.tasks);
  out.overfull_device = search::first_overfull_device(out.memory_bytes, plan.machine);
  return out;
}

}  // namespace loom::gui
