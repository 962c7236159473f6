#pragma once
// Calibrating the roofline per kernel shape: how much of a device's peak FLOP/s or bandwidth its
// GEMM-, convolution-, reduction-, transcendental- and elementwise-shaped tasks achieve, from tasks
// measured on it, and how fast its convolutions unfold their windows.
// A machine file keeps the fractions (device.achieved_fraction), and the cost model divides its
// roofline by them, so a machine whose tasks cannot be measured where the search runs is still
// costed near what its kernels do.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/kernel_shape.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/task_measurer.hpp"

namespace loom::runtime {

// One task to measure: an operator over whole inputs of these dims.
struct CalibrationTask {
  std::string op;
  pcg::AttrMap attrs;
  std::vector<std::vector<std::int64_t>> inputs;
};

struct ShapeCalibration {
  // Per pcg::KernelShape: the median over its tasks of the roofline's time over the measured one
  // (forward plus backward, the kernel overheads taken off), at most 1; 1 where no task of the
  // shape was measured.
  std::array<double, pcg::kKernelShapes.size()> achieved_fraction = pcg::per_kernel_shape(1.0);
  std::array<int, pcg::kKernelShapes.size()> tasks = pcg::per_kernel_shape(0);  // measured, per shape
};

// Measures each task with `measurer` (every input taking its gradient) on `device`, whose peak,
// bandwidth, unfolding and overheads the roofline uses; a task the measurer cannot run is left
// out. The unfolding of a convolution's windows is taken off its measured time before the
// fraction is taken, as the cost model charges it beside the roofline. Throws LoomError naming a
// task the library does not accept.
ShapeCalibration calibrate_shapes(const spec::Library& library, const search::DeviceSpec& device, search::TaskMeasurer& measurer,
                                  const std::vector<CalibrationTask>& tasks);

// Two convolutions over the same windows, differing in their filters: their forward times, a
// fixed part (unfolding the windows) plus a part growing with the arithmetic, tell the two apart.
struct UnfoldingPair {
  CalibrationTask fewer, more;  // `more` does more arithmetic over the same unfolded elements
};

// The rate, in bytes of unfolded windows per second, at which the device's convolution kernels
// unfold (search::DeviceSpec::unfolding_bandwidth): per pair, the forward times of both measured
// and the fixed part solved for; the median over the pairs. 0 where no pair could be measured or
// the fixed part came out at none. Throws LoomError naming a pair whose tasks do not unfold the
// same elements, or unfold none.
double calibrate_unfolding(const spec::Library& library, const search::DeviceSpec& device, search::TaskMeasurer& measurer,
                           const std::vector<UnfoldingPair>& pairs);

}  // namespace loom::runtime
