#include "loom/runtime/roofline_calibration.hpp"

#include <algorithm>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/median.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/profile_db.hpp"

namespace loom::runtime {
namespace {

std::vector<pcg::ParallelShape> whole_inputs(const CalibrationTask& task) {
  std::vector<pcg::ParallelShape> inputs;
  for (const auto& dims : task.inputs) inputs.push_back(pcg::ParallelShape::unpartitioned(dims));
  return inputs;
}

pcg::TaskCost cost_of(const spec::Library& library, const CalibrationTask& task, const std::vector<pcg::ParallelShape>& inputs) {
  try {
    return library.task_cost(task.op, task.attrs, inputs);
  } catch (const LoomError& e) {
    throw LoomError("roofline calibration: task " + task.op + ": " + e.what());
  }
}

}  // namespace

ShapeCalibration calibrate_shapes(const spec::Library& library, const search::DeviceSpec& device, search::TaskMeasurer& measurer,
                                  const std::vector<CalibrationTask>& tasks) {
  std::array<std::vector<double>, pcg::kKernelShapes.size()> fractions;
  for (const CalibrationTask& task : tasks) {
    const std::vector<pcg::ParallelShape> inputs = whole_inputs(task);
    const pcg::TaskCost cost = cost_of(library, task, inputs);
    const std::optional<search::MeasuredTask> measured = measurer.measure(search::task_key(task.op, task.attrs, inputs, {}, device.kind));
    if (!measured) continue;
    const search::Roofline bare = search::bare_roofline(cost, device);
    // The roofline charges a backward two kernel overheads; measured figures hold the kernel
    // overheads but not the dispatch, which the cost model adds to both.
    const bool with_backward = measured->backward_seconds.has_value();
    const double overheads = (with_backward ? 3 : 1) * device.kernel_overhead;
    const double unfolding = (1 + (with_backward ? search::backward_unfoldings(cost.unfolding_inputs, {}) : 0)) * bare.unfolding;
    const double seconds = measured->forward_seconds + measured->backward_seconds.value_or(0) - overheads - unfolding;
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

double calibrate_unfolding(const spec::Library& library, const search::DeviceSpec& device, search::TaskMeasurer& measurer,
                           const std::vector<UnfoldingPair>& pairs) {
  std::vector<double> rates;
  for (const UnfoldingPair& pair : pairs) {
    const std::vector<pcg::ParallelShape> fewer_inputs = whole_inputs(pair.fewer), more_inputs = whole_inputs(pair.more);
    const pcg::TaskCost fewer = cost_of(library, pair.fewer, fewer_inputs), more = cost_of(library, pair.more, more_inputs);
    if (fewer.unfolded_elements <= 0 || fewer.unfolded_elements != more.unfolded_elements || more.flops <= fewer.flops)
      throw LoomError("unfolding calibration: " + pair.fewer.op + " and " + pair.more.op +
                      " must unfold the same windows, the second doing more arithmetic (unfolded elements " +
                      std::to_string(fewer.unfolded_elements) + " and " + std::to_string(more.unfolded_elements) + ")");
    const auto t_fewer = measurer.measure(search::task_key(pair.fewer.op, pair.fewer.attrs, fewer_inputs, {}, device.kind));
    const auto t_more = measurer.measure(search::task_key(pair.more.op, pair.more.attrs, more_inputs, {}, device.kind));
    if (!t_fewer || !t_more) continue;
    // t = fixed + flops * per_flop, the kernel overhead taken off both.
    const double a = t_fewer->forward_seconds - device.kernel_overhead, b = t_more->forward_seconds - device.kernel_overhead;
    const double fixed = (a * more.flops - b * fewer.flops) / (more.flops - fewer.flops);
    if (fixed > 0) rates.push_back(fewer.unfolded_elements * 4 / fixed);
  }
  return rates.empty() ? 0 : pcg::median(rates);
}

}  // namespace loom::runtime
