#include "loom/gui/plan_analysis.hpp"

#include <algorithm>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/task_measurement.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/pipeline.hpp"
#include "loom/search/plan_simulation.hpp"
#include "loom/search/simulator.hpp"

namespace loom::gui {

PlanAnalysis analyze_plan(const search::Plan& plan, const spec::Library& library) {
  PlanAnalysis out;
  search::ProfileDatabase measured;
  if (plan.machine.device.kind == runtime::TaskMeasurementSettings{}.device_kind) try {
      measured = search::ProfileDatabase::load(search::user_profile_path(plan.machine.name));
    } catch (const LoomError&) {
      measured = {};  // a damaged database: the roofline alone, as a drawing must not fail on it
    }
  search::CostModel model(library, plan.machine, &measured);
  model.keep_fixed(plan.fixed_weights);
  if (plan.loss) model.take_loss(*plan.loss);
  out.tasks = search::plan_task_graph(plan, model, library);
  out.timeline = search::simulate(out.tasks);
  out.busy_seconds = out.timeline.busy_seconds(out.tasks);
  // The memory model's walk once: each device's need is the most of its curve (plan_device_memory's).
  out.memory_over_time = search::plan_memory_over_time(plan, model, library, out.tasks, out.timeline);
  for (const std::vector<search::MemoryPoint>& curve : out.memory_over_time) {
    double most = 0;
    for (const search::MemoryPoint& p : curve) most = std::max(most, p.bytes);
    out.memory_bytes.push_back(most);
  }
  out.overfull_device = search::first_overfull_device(out.memory_bytes, plan.machine);
  return out;
}

}  // namespace loom::gui
