// Training whose values a backend keeps in its own memory (runtime/value.hpp), on a device whose
// memory lies in the host's (host_device.hpp): the same losses and weights as on the CPU, and
// between steps nothing crosses to the host but the output the loss reads.
#include <string>

#include "host_device.hpp"
#include "training_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;
using testing::HostDevice;

std::size_t elements_of(const std::vector<std::int64_t>& dims) { return Tensor<double>::element_count(dims); }

TEST(DeviceValues, TrainingOnTheDeviceFollowsTheCpuRun) {
  HostDevice<double> device;
  const KernelRegistry kernels = testing::host_device_registry(device);
  LocalTransport local;
  for (const SuiteModel& model : suite_models()) {
    SCOPED_TRACE(model.name);
    expect_training_matches<double>(model, model.graph, 1, local, 1e-9, 10, Backend::Cuda, &kernels);
    for (PlanKind kind : {PlanKind::DataParallel, PlanKind::Megatron, PlanKind::Reduction}) {
      SCOPED_TRACE(plan_name(kind) + " on 4 devices in one process");
      expect_training_matches<double>(model, plan_graph(kind, model.graph, 4), 4, local, 1e-9, 10, Backend::Cuda, &kernels);
    }
  }
  EXPECT_GT(device.copies_to_host, 0u);
}

TEST(DeviceValues, AdamKeepsItsMomentsOnTheDeviceAndFollowsTheCpuRun) {
  HostDevice<double> device;
  const KernelRegistry kernels = testing::host_device_registry(device);
  TrainSettings s;
  s.steps = 8;
  s.optimizer = optimizer_from_name("adam");
  expect_backend_matches_cpu<double>(suite_models().front(), s, Backend::Cuda, kernels, 1e-12);
}

// What a run of `steps` steps copies each way, per step.
struct Copies {
  std::vector<std::size_t> to_host, from_host;
};

Copies copies_per_step(const pcg::Graph& plan, int devices, std::int64_t steps) {
  HostDevice<float> device;
  const KernelRegistry kernels = testing::host_device_registry(device);
  const SuiteModel model = suite_models().front();
  TrainSettings s;
  s.steps = steps;
  s.run_name = model.name;
  s.backend = Backend::Cuda;
  s.plan_devices = devices;
  Copies copies;
  const auto progress = [&](const StepReport&) {
    copies.to_host.push_back(device.elements_to_host);
    copies.from_host.push_back(device.elements_from_host);
  };
  const TrainReport report = train<float>(library(), plan, s, progress, nullptr, &kernels);
  EXPECT_TRUE(report.compiled_ops.empty() && report.interpreted_ops.empty()) << "every operator of the model needs a native kernel";
  return copies;
}

// After the first step has copied the weights to the device, a step copies to it only the batch's
// inputs and the loss's gradient of the output, and back only the output the loss reads: the
// gradients, the optimizer's steps, every value between kernels and the layout changes of a plan
// run in one process stay on the device. (A plan that leaves the output in partial sums copies
// the output's gradient once per partial sum: each takes the whole gradient.)
TEST(DeviceValues, BetweenStepsOnlyTheBatchAndTheLossCrossToAndFromTheHost) {
  const pcg::Graph model = suite_models().front().graph;
  std::size_t batch = 0, weights = 0;
  for (const pcg::Node& n : model.nodes()) {
    if (n.op == pcg::kInputOp) batch += elements_of(n.output_shapes[0].dims);
    if (n.op == pcg::kWeightOp) weights += elements_of(n.output_shapes[0].dims);
  }
  const std::size_t output = elements_of(model.shape_of(model.outputs().front()).dims);
  for (PlanKind kind : {PlanKind::DataParallel, PlanKind::Megatron, PlanKind::Reduction}) {
    for (int devices : {1, 4}) {
      if (devices == 1 && kind != PlanKind::DataParallel) continue;
      SCOPED_TRACE(plan_name(kind) + " on " + std::to_string(devices) + " devices in one process");
      const Copies c = copies_per_step(devices == 1 ? model : plan_graph(kind, model, devices), devices, 5);
      ASSERT_EQ(c.to_host.size(), 5u);
      const bool partial_sums = kind == PlanKind::Reduction;
      if (!partial_sums) {
        EXPECT_EQ(c.from_host[0], weights + batch + output) << "the first step copies the weights, the batch and the output's gradient";
      }
      EXPECT_EQ(c.to_host[0], output);
      for (std::size_t step = 1; step < c.to_host.size(); ++step) {
        EXPECT_EQ(c.to_host[step] - c.to_host[step - 1], output) << "step " << step + 1;
        if (partial_sums) {
          EXPECT_LT(c.from_host[step] - c.from_host[step - 1], batch + weights) << "step " << step + 1;
        } else {
          EXPECT_EQ(c.from_host[step] - c.from_host[step - 1], batch + output) << "step " << step + 1;
        }
      }
    }
  }
}

// The executor counts the activations a backend holds as it counts the host's.
TEST(DeviceValues, ActivationsOnTheDeviceCountAsOnTheHost) {
  HostDevice<double> device;
  const KernelRegistry kernels = testing::host_device_registry(device);
  const SuiteModel model = suite_models()[2];
  TrainSettings s;
  s.steps = 2;
  s.run_name = model.name;
  const TrainReport cpu = train<double>(library(), model.graph, s);
  s.backend = Backend::Cuda;
  const TrainReport on_device = train<double>(library(), model.graph, s, {}, nullptr, &kernels);
  EXPECT_GT(cpu.peak_activation_bytes, 0u);
  EXPECT_EQ(on_device.peak_activation_bytes, cpu.peak_activation_bytes);
}

}  // namespace
}  // namespace loom::runtime
