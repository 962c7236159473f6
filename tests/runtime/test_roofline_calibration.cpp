// The roofline calibrated per kernel shape from measured tasks.
#include <gtest/gtest.h>

#include <map>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/roofline_calibration.hpp"
#include "loom/runtime/task_measurement.hpp"
#include "sharded_check.hpp"

namespace loom::runtime {
namespace {

using sharded_test::library;

// Reports each operator's task as `slowdown[op]` times its roofline, forward and backward.
class SlowerThanTheRoofline final : public search::TaskMeasurer {
 public:
  SlowerThanTheRoofline(const search::DeviceSpec& device, std::map<std::string, double> slowdown)
      : device_(device), slowdown_(std::move(slowdown)) {}
  std::string device_kind() const override { return device_.kind; }
  std::optional<search::MeasuredTask> measure(const search::ProfileKey& task) override {
    if (!slowdown_.count(task.op)) return std::nullopt;
    const pcg::TaskCost cost = library().task_cost(task.op, task.attrs, task.inputs);
    const double kernel = std::max(cost.flops / device_.peak_flops, (cost.bytes_read + cost.bytes_written) / device_.memory_bandwidth);
    // As the roofline charges it, the kernel overhead in each pass; a convolution's windows
    // unfolded once forward and twice backward where the device unfolds them.
    const double unfolding = device_.unfolding_bandwidth > 0 ? cost.unfolded_elements * 4 / device_.unfolding_bandwidth : 0;
    const double forward = slowdown_.at(task.op) * kernel + device_.kernel_overhead;
    search::MeasuredTask t;
    t.forward_seconds = forward + unfolding;
    t.backward_seconds = 2 * forward + 2 * unfolding;
    t.samples = 3;
    return t;
  }
  std::optional<search::MeasuredTask> measure_update(const std::string&, const std::vector<std::int64_t>&,
                                                     const std::vector<std::int64_t>&) override {
    return std::nullopt;
  }
  std::optional<search::MeasuredTask> measure_accumulation(const std::vector<std::int64_t>&) override { return std::nullopt; }
  std::optional<search::MeasuredTask> measure_loss(const search::LossTask&) override { return std::nullopt; }
  std::optional<search::MeasuredTask> measure_layout_change(const search::LayoutChangeTask&) override { return std::nullopt; }

 private:
  search::DeviceSpec device_;
  std::map<std::string, double> slowdown_;
};

search::DeviceSpec device() {
  search::DeviceSpec d;
  d.kind = "cpu";
  d.peak_flops = 50e9;
  d.memory_bandwidth = 20e9;
  d.kernel_overhead = 1e-7;
  d.dispatch_overhead = 2e-7;
  return d;
}

const pcg::AttrMap kConv = {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}};

TEST(RooflineCalibration, EachShapeGetsTheMedianFractionOfItsTasks) {
  SlowerThanTheRoofline measurer(device(), {{"matmul", 2}, {"linear", 4}, {"batch_matmul", 5}, {"conv2d", 3}, {"relu", 8}, {"gelu", 20}});
  const std::vector<CalibrationTask> tasks = {
      {"matmul", {}, {{64, 128}, {128, 32}}},
      {"linear", {}, {{64, 128}, {128, 32}, {32}}},
      {"batch_matmul", {}, {{4, 16, 8}, {4, 8, 16}}},
      {"conv2d", kConv, {{2, 4, 8, 8}, {8, 4, 3, 3}}},
      {"relu", {}, {{64, 128}}},
      {"gelu", {}, {{64, 128}}},
      {"softmax", {}, {{64, 128}}},  // not measurable here: left out
  };
  const ShapeCalibration c = calibrate_shapes(library(), device(), measurer, tasks);
  const auto at = [](pcg::KernelShape s) { return static_cast<std::size_t>(s); };
  EXPECT_EQ(c.tasks[at(pcg::KernelShape::Contraction)], 3);
  EXPECT_NEAR(c.achieved_fraction[at(pcg::KernelShape::Contraction)], 1.0 / 4, 1e-9);  // of 1/2, 1/4, 1/5
  EXPECT_NEAR(c.achieved_fraction[at(pcg::KernelShape::Convolution)], 1.0 / 3, 1e-9);
  EXPECT_NEAR(c.achieved_fraction[at(pcg::KernelShape::Elementwise)], 1.0 / 8, 1e-9);
  EXPECT_NEAR(c.achieved_fraction[at(pcg::KernelShape::Transcendental)], 1.0 / 20, 1e-9);
  EXPECT_EQ(c.tasks[at(pcg::KernelShape::Reduction)], 0);
  EXPECT_EQ(c.achieved_fraction[at(pcg::KernelShape::Reduction)], 1);
}

TEST(RooflineCalibration, AKernelFasterThanTheRooflineCountsAsReachingIt) {
  SlowerThanTheRoofline measurer(device(), {{"matmul", 0.5}});
  const ShapeCalibration c = calibrate_shapes(library(), device(), measurer, {{"matmul", {}, {{64, 128}, {128, 32}}}});
  EXPECT_EQ(c.achieved_fraction[static_cast<std::size_t>(pcg::KernelShape::Contraction)], 1);
}

TEST(RooflineCalibration, ATaskTheLibraryRefusesIsNamed) {
  SlowerThanTheRoofline measurer(device(), {});
  try {
    calibrate_shapes(library(), device(), measurer, {{"matmul", {}, {{64, 128}, {64, 32}}}});
    ADD_FAILURE() << "a task of mismatched shapes was calibrated";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("roofline calibration: task matmul"), std::string::npos) << e.what();
  }
}

TEST(RooflineCalibration, AConvolutionsUnfoldingIsTakenOffItsTimeBeforeItsFraction) {
  search::DeviceSpec unfolding = device();
  unfolding.unfolding_bandwidth = 2e9;
  SlowerThanTheRoofline measurer(unfolding, {{"conv2d", 3}});
  const std::vector<CalibrationTask> conv = {{"conv2d", kConv, {{2, 4, 8, 8}, {8, 4, 3, 3}}}};
  const auto at = static_cast<std::size_t>(pcg::KernelShape::Convolution);
  EXPECT_NEAR(calibrate_shapes(library(), unfolding, measurer, conv).achieved_fraction[at], 1.0 / 3, 1e-9);
  // Against a device that does not unfold, the same times make the fraction smaller.
  EXPECT_LT(calibrate_shapes(library(), device(), measurer, conv).achieved_fraction[at], 1.0 / 3 - 0.01);
}

CalibrationTask conv_of(std::int64_t filters) { return {"conv2d", kConv, {{4, 8, 12, 12}, {filters, 8, 3, 3}}}; }

TEST(RooflineCalibration, TheUnfoldingRateIsTheFixedPartOfConvolutionsOverTheSameWindows) {
  search::DeviceSpec d = device();
  d.memory_bandwidth = 1e15;  // every task bound by its arithmetic, which the fit takes as growing with it
  d.unfolding_bandwidth = 3e9;
  SlowerThanTheRoofline measurer(d, {{"conv2d", 2}});
  EXPECT_NEAR(calibrate_unfolding(library(), d, measurer, {{conv_of(1), conv_of(16)}, {conv_of(2), conv_of(8)}}), 3e9, 3e9 * 1e-9);
  SlowerThanTheRoofline unmeasurable(d, {});
  EXPECT_EQ(calibrate_unfolding(library(), d, unmeasurable, {{conv_of(1), conv_of(16)}}), 0);
}

TEST(RooflineCalibration, APairOverDifferentWindowsIsRefused) {
  SlowerThanTheRoofline measurer(device(), {{"conv2d", 2}});
  CalibrationTask other = conv_of(16);
  other.inputs[0] = {2, 8, 12, 12};
  for (const UnfoldingPair& pair : {UnfoldingPair{conv_of(1), other}, UnfoldingPair{conv_of(16), conv_of(1)},
                                    UnfoldingPair{{"matmul", {}, {{8, 16}, {16, 4}}}, {"matmul", {}, {{8, 16}, {16, 8}}}}}) {
    try {
      calibrate_unfolding(library(), device(), measurer, {pair});
      ADD_FAILURE() << "a pair that does not unfold the same windows was taken";
    } catch (const LoomError& e) {
      EXPECT_NE(std::string(e.what()).find("must unfold the same windows"), std::string::npos) << e.what();
    }
  }
}

TEST(RooflineCalibration, OnThisHostAConvolutionsKernelUnfoldsItsWindows) {
  search::DeviceSpec host = search::load_machine("cpu_host").device;
  LocalTaskMeasurer measurer(library());
  const CalibrationTask one = {"conv2d", kConv, {{4, 16, 12, 12}, {1, 16, 3, 3}}},
                        many = {"conv2d", kConv, {{4, 16, 12, 12}, {32, 16, 3, 3}}};
  const double rate = calibrate_unfolding(library(), host, measurer, {{one, many}});
  // One filter's forward is mostly unfolding, which 32 filters' arithmetic does not multiply: the
  // rate comes out near the one measured for this host's machine file.
  EXPECT_GT(rate, host.unfolding_bandwidth / 10);
  EXPECT_LT(rate, host.unfolding_bandwidth * 10);
}

TEST(RooflineCalibration, OnThisHostATaskOfEachShapeIsMeasuredThroughTheRuntime) {
  search::DeviceSpec host = search::load_machine("cpu_host").device;
  LocalTaskMeasurer measurer(library());
  const ShapeCalibration c = calibrate_shapes(library(), host, measurer,
                                              {{"matmul", {}, {{64, 128}, {128, 64}}},
                                               {"conv2d", kConv, {{2, 4, 8, 8}, {8, 4, 3, 3}}},
                                               {"pool2d_max", {{"kh", 3}, {"kw", 3}, {"stride", 1}, {"pad", 0}}, {{2, 4, 10, 10}}},
                                               {"relu", {}, {{64, 128}}},
                                               {"gelu", {}, {{64, 128}}}});
  for (pcg::KernelShape shape : pcg::kKernelShapes) EXPECT_EQ(c.tasks[static_cast<std::size_t>(shape)], 1) << pcg::kernel_shape_name(shape);
  // A relu comes nearer the memory's bandwidth than a GELU, which evaluates erf's series per
  // element.
  EXPECT_GT(c.achieved_fraction[static_cast<std::size_t>(pcg::KernelShape::Elementwise)],
            c.achieved_fraction[static_cast<std::size_t>(pcg::KernelShape::Transcendental)]);
}

}  // namespace
}  // namespace loom::runtime
