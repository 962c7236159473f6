#include "loom/runtime/roofline_calibration.hpp"

#include <algorithm>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/profile_db.hpp"
#include "median.hpp"

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
    const double kernel = std::max(cost.flops / device.peak_flops, (cost.bytes_read + cost.bytes_written) / device.memory_bandwidth);
    // The roofline charges a backward twice the forward, kernel overheads included; measured
    // figures hold the kernel overhead but not the dispatch, which the cost model adds to both.
    const int passes = measured->backward_seconds ? 3 : 1;
    const double overheads = passes * device.kernel_overhead;
    const double seconds = measured->forward_seconds + measured->backward_seconds.value_or(0) - overheads;
    if (seconds <= 0) continue;
    fractions[static_cast<std::size_t>(cost.shape)].push_back(std::min(1.0, passes * kernel / seconds));
  }
  ShapeCalibration out;
  for (std::size_t s = 0; s < fractions.size(); ++s) {
    out.tasks[s] = static_cast<int>(fractions[s].size());
    if (!fractions[s].empty()) out.achieved_fraction[s] = median(fractions[s]);
  }
  return out;
}

}  // namespace loom::runtime
