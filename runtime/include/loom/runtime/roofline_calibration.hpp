#pragma once
// Calibrating the roofline per kernel shape: how much of a device's peak FLOP/s or bandwidth its
// GEMM-, convolution-, reduction- and elementwise-shaped tasks achieve, from tasks measured on it.
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
// bandwidth and overheads the roofline uses; a task the measurer cannot run is left out. Throws
// LoomError naming a task the library does not accept.
ShapeCalibration calibrate_shapes(const spec::Library& library, const search::DeviceSpec& device, search::TaskMeasurer& measurer,
                                  const std::vector<CalibrationTask>& tasks);

}  // namespace loom::runtime
