#include <gtest/gtest.h>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/search/cost_model.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

// x[m, k] * w[k, n], rows split in two, weights replicated.
pcg::Graph data_parallel_matmul(std::int64_t m, std::int64_t k, std::int64_t n) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({m, k}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({k, n}), true);
  const int px = g.add_node(library(), "partition", {{"dim", 0}, {"degree", 2}}, {{x, 0}});
  const int rw = g.add_node(library(), "replicate", {{"degree", 2}}, {{w, 0}});
  const int mm = g.add_node(library(), "matmul", {}, {{px, 0}, {rw, 0}});
  g.mark_output({g.add_node(library(), "combine", {{"dim", 0}, {"degree", 2}}, {{mm, 0}}), 0});
  return g;
}

TEST(CostModel, RooflineOfAComputeBoundAndAMemoryBoundTask) {
  const Machine machine = load_machine("summit");
  const CostModel model(library(), machine);
  const pcg::Graph big = data_parallel_matmul(4096, 4096, 4096);
  const TaskEstimate mm = model.compute(big, big.node(4));
  // Each of the two tasks multiplies a 2048x4096 block by 4096x4096: at least 2*m*k*n/2 flops.
  EXPECT_GE(mm.flops, 2.0 * 2048 * 4096 * 4096 * 0.99);
  EXPECT_DOUBLE_EQ(mm.seconds, mm.flops / machine.device.peak_flops + machine.device.kernel_overhead);
  EXPECT_FALSE(mm.measured);
  // A relu reads and writes each element once: bound by memory bandwidth.
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({1024, 1024}));
  g.mark_output({g.add_node(library(), "relu", {}, {{x, 0}}), 0});
  const TaskEstimate relu = model.compute(g, g.node(1));
  EXPECT_DOUBLE_EQ(relu.bytes, 2.0 * 1024 * 1024 * 4);
  EXPECT_DOUBLE_EQ(relu.seconds, relu.bytes / machine.device.memory_bandwidth + machine.device.kernel_overhead);
  // Parallelization operators and inputs run no kernel.
  EXPECT_EQ(model.compute(big, big.node(2)).seconds, 0);
  EXPECT_EQ(model.compute(big, big.node(0)).seconds, 0);
}

std::vector<pcg::ParallelShape> input_shapes(const pcg::Graph& g, const pcg::Node& n) {
  std::vector<pcg::ParallelShape> shapes;
  for (pcg::PortRef in : n.inputs) shapes.push_back(g.shape_of(in));
  return shapes;
}

// The backward follows the arithmetic of the gradient the spec derives, every input taking its
// gradient: twice the forward for a matrix product, three times for a gated linear unit, whose
// gradient computes both products again.
TEST(CostModel, TheBackwardRooflineIsTheDerivedGradients) {
  const Machine machine = load_machine("summit");
  const DeviceSpec& d = machine.device;
  const pcg::Graph big = data_parallel_matmul(4096, 4096, 4096);
  const TaskEstimate mm = CostModel(library(), machine).compute(big.node(4), input_shapes(big, big.node(4)));
  EXPECT_DOUBLE_EQ(mm.backward_seconds - d.dispatch_overhead, 2 * (mm.seconds - d.dispatch_overhead));

  const spec::Library gated = spec::Library::from_text("import \"" + spec::Library::default_specs_dir() + "/ops/core.loom\";\n" + R"(
op glu(x: [b, k], w: [k, n], v: [k, n]) -> [b, n] {
  out[i, j] = sum(p) (x[i, p] * w[p, j]) * sigmoid(sum(q) (x[i, q] * v[q, j]));
}
)");
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({2048, 2048}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({2048, 2048}), true);
  const int v = g.add_input("v", pcg::ParallelShape::unpartitioned({2048, 2048}), true);
  g.mark_output({g.add_node(gated, "glu", {}, {{x, 0}, {w, 0}, {v, 0}}), 0});
  const TaskEstimate glu = CostModel(gated, machine).compute(g.node(3), input_shapes(g, g.node(3)));
  const double forward = glu.flops / d.peak_flops;  // compute-bound
  EXPECT_DOUBLE_EQ(glu.seconds, forward + d.kernel_overhead + d.dispatch_overhead);
  // Six products of 2 x 2048^3 against the forward's two, and the elementwise parts.
  EXPECT_NEAR((glu.backward_seconds - 2 * d.kernel_overhead - d.dispatch_overhead) / forward, 3, 0.01);
}

TEST(CostModel, AFirstLayersBackwardComputesItsWeightsGradientAlone) {
  const Machine machine = load_machine("summit");
  const DeviceSpec& d = machine.device;
  const pcg::Graph big = data_parallel_matmul(4096, 4096, 4096);
  const CostModel model(library(), machine);
  const pcg::Node& mm = big.node(4);
  const std::vector<pcg::ParallelShape> inputs = input_shapes(big, mm);
  const TaskEstimate both = model.compute(mm, inputs, {true, true}), weights = model.compute(mm, inputs, {false, true});
  EXPECT_DOUBLE_EQ(weights.seconds, both.seconds);
  // One gradient product where both inputs' gradients are two, each as long as the forward.
  EXPECT_NEAR(weights.backward_seconds - 2 * d.kernel_overhead - d.dispatch_overhead,
              both.seconds - d.kernel_overhead - d.dispatch_overhead, 1e-12);
  EXPECT_EQ(model.compute(mm, inputs, {false, false}).backward_seconds, 0);
  // In the graph, x is data: it takes none.
  EXPECT_DOUBLE_EQ(model.compute(big, mm).backward_seconds, weights.backward_seconds);
}

TEST(CostModel, TheRooflineIsDividedByTheFractionItsKernelShapeAchieves) {
  Machine calibrated = load_machine("summit");
  const Machine plain = calibrated;
  calibrated.device.achieved_fraction[static_cast<std::size_t>(pcg::KernelShape::Contraction)] = 0.5;
  calibrated.device.achieved_fraction[static_cast<std::size_t>(pcg::KernelShape::Elementwise)] = 0.25;
  const pcg::Graph big = data_parallel_matmul(1024, 1024, 1024);
  const TaskEstimate before = CostModel(library(), plain).compute(big, big.node(4));
  const TaskEstimate after = CostModel(library(), calibrated).compute(big, big.node(4));
  const double overheads = plain.device.kernel_overhead + plain.device.dispatch_overhead;
  EXPECT_DOUBLE_EQ(after.seconds - overheads, 2 * (before.seconds - overheads));
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({512, 512}));
  const int relu = g.add_node(library(), "relu", {}, {{x, 0}});
  const int pool = g.add_node(library(), "pool2d_max", {{"kh", 3}, {"kw", 3}, {"stride", 1}, {"pad", 0}},
                              {{g.add_input("image", pcg::ParallelShape::unpartitioned({2, 4, 32, 32})), 0}});
  g.mark_output({relu, 0});
  g.mark_output({pool, 0});
  EXPECT_DOUBLE_EQ(CostModel(library(), calibrated).compute(g, g.node(relu)).seconds - overheads,
                   4 * (CostModel(library(), plain).compute(g, g.node(relu)).seconds - overheads));
  // A reduction's fraction was not calibrated: its roofline is unchanged.
  EXPECT_DOUBLE_EQ(CostModel(library(), calibrated).compute(g, g.node(pool)).seconds,
                   CostModel(library(), plain).compute(g, g.node(pool)).seconds);
}

// x[8, 3, 32, 32] convolved with 16 filters of 5x5, split in two along the images or the filters.
pcg::Graph split_convolution(bool by_filters) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 3, 32, 32}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({16, 3, 5, 5}), true);
  const pcg::AttrMap split = {{"dim", 0}, {"degree", 2}}, copies = {{"degree", 2}};
  const int px = g.add_node(library(), by_filters ? "replicate" : "partition", by_filters ? copies : split, {{x, 0}});
  const int pw = g.add_node(library(), by_filters ? "partition" : "replicate", by_filters ? split : copies, {{w, 0}});
  const int conv =
      g.add_node(library(), "conv2d", {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 0}, {"pad_w", 0}, {"act", 0}}, {{px, 0}, {pw, 0}});
  g.mark_output({conv, 0});
  return g;
}

TEST(CostModel, ADeviceThatUnfoldsWindowsPaysForEveryWindowATaskUnfolds) {
  Machine unfolding = load_machine("summit");
  const Machine plain = unfolding;
  unfolding.device.unfolding_bandwidth = 50e9;
  const pcg::Graph by_images = split_convolution(false), by_filters = split_convolution(true);
  const auto estimate = [](const Machine& m, const pcg::Graph& g) { return CostModel(library(), m).compute(g, g.node(4)); };
  // On a device whose kernels multiply windows in place, the same arithmetic costs the same (both
  // bound by it on Summit, though the split along the filters reads every image).
  EXPECT_DOUBLE_EQ(estimate(plain, by_images).flops, estimate(plain, by_filters).flops);
  EXPECT_DOUBLE_EQ(estimate(plain, by_images).seconds, estimate(plain, by_filters).seconds);
  // 8 images of 28x28 windows of 3x5x5 elements: a task split along the images unfolds half.
  const double every_window = 8.0 * 28 * 28 * 3 * 5 * 5 * 4 / 50e9;
  EXPECT_NEAR(estimate(unfolding, by_images).seconds - estimate(plain, by_images).seconds, every_window / 2, 1e-15);
  EXPECT_NEAR(estimate(unfolding, by_filters).seconds - estimate(plain, by_filters).seconds, every_window, 1e-15);
  // The backward unfolds again for the filters' gradient alone: the images take none.
  EXPECT_NEAR(estimate(unfolding, by_filters).backward_seconds - estimate(plain, by_filters).backward_seconds, every_window, 1e-15);
  const pcg::TaskCost conv = library().task_cost("conv2d", by_filters.node(4).attrs, input_shapes(by_filters, by_filters.node(4)));
  EXPECT_EQ(conv.unfolding_inputs, 0b11u);  // the windows and the filters
  EXPECT_EQ(backward_unfoldings(conv.unfolding_inputs, {}), 2);
  EXPECT_EQ(backward_unfoldings(conv.unfolding_inputs, {false, false}), 0);
  EXPECT_EQ(backward_unfoldings(0b011, {false, true, true}), 1);  // a third input, not a factor, unfolds nothing
}

TEST(CostModel, AMeasuredProfileOverridesTheRoofline) {
  const Machine machine = load_machine("p100");
  const pcg::Graph g = data_parallel_matmul(64, 32, 16);
  ProfileDatabase db;
  const pcg::Node& mm = g.node(4);
  // x is data: the task's backward takes no gradient for it, and its key says so.
  db.record(task_key(mm.op, mm.attrs, {g.shape_of(mm.inputs[0]), g.shape_of(mm.inputs[1])}, {false, true}, "P100"), 1.5e-3);
  const TaskEstimate est = CostModel(library(), machine, &db).compute(g, mm);
  EXPECT_TRUE(est.measured);
  EXPECT_DOUBLE_EQ(est.seconds, 1.5e-3);
  EXPECT_DOUBLE_EQ(est.backward_seconds, 3e-3);  // no backward measured: twice the forward
  // Another device kind does not use that figure.
  EXPECT_FALSE(CostModel(library(), load_machine("summit"), &db).compute(g, mm).measured);
}

TEST(CostModel, AMeasuredBackwardAndTheDispatchOverheadArePartOfTheEstimate) {
  Machine machine = load_machine("p100");
  machine.device.dispatch_overhead = 2e-5;
  const pcg::Graph g = data_parallel_matmul(64, 32, 16);
  const pcg::Node& mm = g.node(4);
  const TaskEstimate roofline = CostModel(library(), machine).compute(g, mm);
  machine.device.dispatch_overhead = 0;
  const TaskEstimate bare = CostModel(library(), machine).compute(g, mm);
  EXPECT_DOUBLE_EQ(roofline.seconds, bare.seconds + 2e-5);
  EXPECT_DOUBLE_EQ(roofline.backward_seconds, 2 * bare.seconds + 2e-5);

  machine.device.dispatch_overhead = 2e-5;
  ProfileDatabase db;
  const ProfileKey key = task_key(mm.op, mm.attrs, {g.shape_of(mm.inputs[0]), g.shape_of(mm.inputs[1])}, {false, true}, "P100");
  db.record(key, 1e-3);
  db.record_backward(key, 1.7e-3);
  const TaskEstimate measured = CostModel(library(), machine, &db).compute(g, mm);
  EXPECT_DOUBLE_EQ(measured.seconds, 1e-3 + 2e-5);
  EXPECT_DOUBLE_EQ(measured.backward_seconds, 1.7e-3 + 2e-5);
}

TEST(CostModel, AWeightUpdateIsItsBytesAtBandwidthOrAsMeasured) {
  const Machine machine = load_machine("p100");
  const double bandwidth = machine.device.memory_bandwidth;
  // SGD reads the element and its gradient and writes the element; Adam also reads and writes
  // its two moments.
  const TaskEstimate sgd = CostModel(library(), machine).weight_update({32, 8}, {32, 16});
  EXPECT_FALSE(sgd.measured);
  EXPECT_DOUBLE_EQ(sgd.bytes, 32 * 8 * 3 * 4.0);
  EXPECT_DOUBLE_EQ(sgd.seconds, sgd.bytes / bandwidth);
  EXPECT_DOUBLE_EQ(CostModel(library(), machine, nullptr, "adam").weight_update({32, 8}, {32, 16}).seconds, 32 * 8 * 7 * 4.0 / bandwidth);

  ProfileDatabase db;
  db.record(weight_update_key("sgd", {32, 8}, {32, 16}, "P100"), 4e-6);
  const TaskEstimate measured = CostModel(library(), machine, &db).weight_update({32, 8}, {32, 16});
  EXPECT_TRUE(measured.measured);
  EXPECT_DOUBLE_EQ(measured.seconds, 4e-6);
  // The same box of a weight of another shape, another optimizer's step: not that figure.
  EXPECT_FALSE(CostModel(library(), machine, &db).weight_update({32, 8}, {64, 8}).measured);
  EXPECT_FALSE(CostModel(library(), machine, &db, "adam").weight_update({32, 8}, {32, 16}).measured);
  EXPECT_EQ(weight_update_key("sgd", {32, 8}, {32, 16}, "P100").to_string(), "sgd_update{} [32, 8] [32, 16] on P100");
}

TEST(CostModel, RefusesAnUnknownOptimizer) {
  try {
    CostModel(library(), load_machine("p100"), nullptr, "lamb");
    FAIL() << "no error";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown optimizer 'lamb'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::search
