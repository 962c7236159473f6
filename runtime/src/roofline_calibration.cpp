#include "loom/runtime/roofline_calibration.hpp"

#include <algorithm>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/median.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/profile_db.hpp"

namespace loom::runtime {

ShapeCalibration calibrate_shapes(const spec::Library& library, const search::DeviceSpec& device, search::TaskMeasurer& measurer,
                                  const std::vector<CalibrationTask>& tasks) {
  std::array<std::vector<double>, pcg::kKernelShapes.size()> fractions;
  for (const CalibrationTask& task : tasks) {
    std::vector<pcg::ParallelShape> inputs;
    for (const auto& dims : task.inputs) inputs.push_back(pcg::ParallelShape::unpartitioned(dims));
    pcg::TaskCost cost;
    try {
      cost = library.task_cost(task.op, task.attrs, inputs);
    } catch (const LoomError& e) {
      throw LoomError("roofline calibration: task " + task.op + ": " + e.what());
    }
    const std::optional<search::MeasuredTask> measured = measurer.measure(search::task_key(task.op, task.attrs, inputs, {}, device.kind));
    if (!measured) continue;
    const search::Roofline bare = search::bare_roofline(cost, device);
    // The roofline charges a backward two kernel overheads; measured figures hold the kernel
    // overheads but not the dispatch, which the cost model adds to both.
    const bool with_backward = measured->backward_seconds.has_value();
    const double overheads = (with_backward ? 3 : 1) * device.kernel_overhead;
    const double seconds = measured->forward_seconds + measured->backward_seconds.value_or(0) - overheads;
    if (seconds <= 0) continue;
    const double roofline = bare.forward + (with_backward ? bare.backward : 0);
    fractions[static_cast<std::size_t>(cost.shape)].push_back(std::min(1.0, roofline / seconds));
  }
  ShapeCalibration out;
  for (std::size_t s = 0; s < fractions.size(); ++s) {
    out.tasks[s] = static_cast<int>(fractions[s].size());
    if (!fractions[s].empty()) out.achieved_fraction[s] = pcg::median(fractions[s]);
  }
  return out;
}

}  // namespace loom::runtime
