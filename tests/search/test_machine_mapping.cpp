#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "loom/interpreter/graph_eval.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/models/registry.hpp"
#include "loom/models/values.hpp"
#include "loom/search/machine_mapping.hpp"
#include "loom/search/materialize.hpp"
#include "loom/search/plan_cost.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

// Unity's figure-1 MLP at the given sizes: x[b, k] -> matmul -> relu -> matmul.
pcg::Graph two_layer_mlp(std::int64_t b, std::int64_t k, std::int64_t h, std::int64_t o) {
  return models::build_model(library(), "mlp_fig1", {{"batch", b}, {"in", k}, {"hidden", h}, {"out", o}});
}

// Two branches off one matmul joined by an add, then a residual add of the branch point.
pcg::Graph diamond(std::int64_t b, std::int64_t h) {
  pcg::Graph g;
  const int x = g.add_input("x", shape({b, h}));
  const int w = g.add_input("w", shape({h, h}), true);
  const int v = g.add_input("v", shape({h, h}), true);
  const int m = g.add_node(library(), "matmul", {}, {{x, 0}, {w, 0}}, "m");
  const int a = g.add_node(library(), "relu", {}, {{m, 0}}, "a");
  const int t = g.add_node(library(), "tanh", {}, {{m, 0}}, "t");
  const int mv = g.add_node(library(), "matmul", {}, {{t, 0}, {v, 0}}, "mv");
  const int s = g.add_node(library(), "ewadd", {}, {{a, 0}, {mv, 0}}, "s");
  g.mark_output({g.add_node(library(), "ewadd", {}, {{s, 0}, {m, 0}}, "res"), 0});
  return g;
}

Machine small_machine(int devices) { return load_machine("summit").with_devices_per_node(devices); }

void expect_dp_equals_brute_force(const pcg::Graph& g, int devices, std::size_t max_views) {
  const Machine machine = small_machine(devices);
  const CostModel model(library(), machine);
  MappingOptions options;
  options.degrees = {2, 4};
  options.max_views = max_views;
  MachineMapper dp(library(), model, options);
  MachineMapper exhaustive(library(), model, options);
  const Mapping found = dp.map(g);
  const Mapping reference = exhaustive.brute_force(g);
  ASSERT_TRUE(std::isfinite(reference.estimate));
  EXPECT_NEAR(found.estimate, reference.estimate, 1e-12 * reference.estimate) << devices << " devices";
}

TEST(MachineMapping, DynamicProgrammingEqualsBruteForceOnAChain) {
  const pcg::Graph g = two_layer_mlp(8, 8, 8, 4);
  expect_dp_equals_brute_force(g, 2, 2);
  expect_dp_equals_brute_force(g, 4, 2);
}

TEST(MachineMapping, DynamicProgrammingEqualsBruteForceWithBranchesAndAResidual) {
  const pcg::Graph g = diamond(8, 4);
  expect_dp_equals_brute_force(g, 2, 2);
  expect_dp_equals_brute_force(g, 4, 1);
}

// A product that ends the backward pass (its weight's sum waited in) is not alike to the memo to
// the same product where another's backward ends it (its sum beside the pass): a mapper that
// mapped the second graph first maps the first as a mapper new to it does.
TEST(MachineMapping, AProductThatEndsThePassIsNotTakenForOneThatDoesNot) {
  const auto products = [](bool another_first) {
    pcg::Graph g;
    const int x = g.add_input("x", shape({8192, 256}));
    const int w1 = g.add_input("w1", shape({256, 256}), true);
    if (another_first) {
      const int w2 = g.add_input("w2", shape({256, 256}), true);
      g.mark_output({g.add_node(library(), "matmul", {}, {{x, 0}, {w2, 0}}, "b"), 0});
    }
    g.mark_output({g.add_node(library(), "matmul", {}, {{x, 0}, {w1, 0}}, "a"), 0});
    return g;
  };
  const CostModel model(library(), small_machine(4));
  MappingOptions batch_only;
  batch_only.degrees = {2, 4};
  batch_only.admit = [](const pcg::Node&, const ParallelConfig& c) { return c.outputs[0].D[0] > 1; };
  MachineMapper shared(library(), model, batch_only);
  shared.map(products(true));
  const pcg::Graph alone = products(false);
  const Mapping after = shared.map(alone);
  MachineMapper fresh(library(), model, batch_only);
  const Mapping reference = fresh.map(alone);
  ASSERT_TRUE(std::isfinite(reference.estimate));
  ASSERT_GT(reference.placements[alone.find("a")->index()].config.inputs[1].R, 1);
  EXPECT_NEAR(after.estimate, reference.estimate, 1e-12 * reference.estimate);
}

TEST(MachineMapping, DynamicProgrammingEqualsBruteForceWhenMemoryIsTight) {
  const pcg::Graph g = two_layer_mlp(64, 64, 64, 16);
  for (const double share : {0.7, 0.4}) {
    Machine machine = small_machine(4);
    const CostModel roomy(library(), machine);
    const std::vector<double> unsplit = plan_memory(materialize(g, unsplit_placements(g), library()), roomy);
    machine.device.memory_bytes = share * *std::max_element(unsplit.begin(), unsplit.end());
    const CostModel model(library(), machine);
    MappingOptions options;
    options.degrees = {2, 4};
    MachineMapper dp(library(), model, options);
    MachineMapper exhaustive(library(), model, options);
    const Mapping found = dp.map(g);
    const Mapping reference = exhaustive.brute_force(g);
    ASSERT_TRUE(std::isfinite(reference.estimate)) << share;
    EXPECT_NEAR(found.estimate, reference.estimate, 1e-12 * reference.estimate) << share;
  }
}

TEST(MachineMapping, TheMappedPlanComputesTheSameValuesAndSimulates) {
  const pcg::Graph g = diamond(8, 4);
  const Machine machine = small_machine(4);
  const CostModel model(library(), machine);
  MappingOptions options;
  options.degrees = {2, 4};
  MachineMapper mapper(library(), model, options);
  const Mapping m = mapper.map(g);
  const pcg::Graph plan = materialize(g, m.placements, library());
  plan.validate(library());
  for (const pcg::Node& n : plan.nodes()) ASSERT_TRUE(n.view.has_value()) << n.describe();
  EXPECT_TRUE(std::isfinite(plan_cost(plan, model).seconds));
  const models::NamedValues values = models::random_values(library(), g, 3);
  const auto before = spec::evaluate_graph<spec::RealDomain>(library(), g, values);
  const auto after = spec::evaluate_graph<spec::RealDomain>(library(), plan, values);
  ASSERT_EQ(before.size(), after.size());
  ASSERT_EQ(plan.shape_of(plan.outputs()[0]), g.shape_of(g.outputs()[0]));
  for (std::size_t i = 0; i < before[0].data.size(); ++i) EXPECT_NEAR(before[0].data[i], after[0].data[i], 1e-9);
}

TEST(MachineMapping, LargeComputeIsSplitAcrossTheDevices) {
  // A big matmul takes far longer than moving its inputs: the mapping must use every device.
  const pcg::Graph g = two_layer_mlp(4096, 4096, 4096, 4096);
  const Machine machine = small_machine(4);
  const CostModel model(library(), machine);
  MachineMapper mapper(library(), model);
  const Mapping m = mapper.map(g);
  EXPECT_EQ(m.placements[static_cast<std::size_t>(*g.find("fc1.matmul"))].config.tasks(), 4);
  EXPECT_EQ(m.placements[static_cast<std::size_t>(*g.find("fc2.matmul"))].config.tasks(), 4);
}

TEST(MachineMapping, SubResultsAreSharedAcrossGraphs) {
  const pcg::Graph g = diamond(16, 8);
  const Machine machine = small_machine(4);
  const CostModel model(library(), machine);
  MachineMapper shared(library(), model);
  const Mapping first = shared.map(g);
  const std::size_t solved = shared.stats().solved;
  const Mapping again = shared.map(g);
  EXPECT_EQ(shared.stats().solved, solved);  // everything came from the cache
  EXPECT_GT(shared.stats().cache_hits, 0u);
  EXPECT_EQ(first.estimate, again.estimate);
  MappingOptions no_cache;
  no_cache.share_cache = false;
  MachineMapper alone(library(), model, no_cache);
  alone.map(g);
  const std::size_t once = alone.stats().solved;
  alone.map(g);
  EXPECT_EQ(alone.stats().solved, 2 * once);
}

TEST(MachineMapping, ConfigsOfAMatmulIncludeDataModelAndReductionSplits) {
  const pcg::Graph g = two_layer_mlp(8, 8, 8, 4);
  const auto configs = node_configs(library(), g, g.node(*g.find("fc1.matmul")), {2});
  ASSERT_EQ(configs.size(), 4u);  // unsplit, rows, shared dimension, columns
  EXPECT_EQ(configs[0].tasks(), 1);
  bool reduction = false;
  for (const auto& c : configs) reduction |= c.outputs[0].V == 2;
  EXPECT_TRUE(reduction);
  // ReLU of a partial sum is not a partial sum: matmul_relu has no reduction split.
  pcg::Graph f;
  const int x = f.add_input("x", shape({8, 8}));
  const int w = f.add_input("w", shape({8, 8}), true);
  f.mark_output({f.add_node(library(), "matmul_relu", {}, {{x, 0}, {w, 0}}), 0});
  for (const auto& c : node_configs(library(), f, f.node(2), {2})) EXPECT_EQ(c.outputs[0].V, 1) << c.split;
}

// A segment after others (its input stands for a value with a gradient): the pass goes on beside
// its sums.
TEST(MachineMapping, AGradientSumCostsWhatTheReadersBackwardDoesNotHide) {
  pcg::Graph g;
  const int x = g.add_input("segment_input_with_gradient_x", shape({4096, 1024}));
  const int w = g.add_input("w", shape({1024, 1024}), true);
  const int m = g.add_node(library(), "matmul", {}, {{x, 0}, {w, 0}}, "m");
  g.mark_output({m, 0});
  for (const bool overlaps : {true, false}) {
    Machine machine = small_machine(2);
    machine.device.overlaps_communication = overlaps;
    const CostModel model(library(), machine);
    MappingOptions batch_only;
    batch_only.degrees = {2};
    batch_only.admit = [](const pcg::Node&, const ParallelConfig& c) { return c.outputs[0].D[0] == 2; };
    MachineMapper mapper(library(), model, batch_only);
    const Mapping found = mapper.map(g);
    const ParallelConfig& chosen = found.placements[static_cast<std::size_t>(m)].config;
    ASSERT_EQ(chosen.inputs[1].R, 2) << "data parallelism should win on this matmul";
    const TaskEstimate task = model.compute(g.node(m), chosen.inputs);
    const double sum = machine.link_between(0, 1).started_ring_allreduce_seconds(1024.0 * 1024 * kBytesPerElement, 2);
    const double exposed = overlaps ? std::max(0.0, sum - task.backward_seconds) : sum;
    EXPECT_NEAR(found.estimate, task.seconds + task.backward_seconds + exposed, 1e-9 * found.estimate) << "overlaps " << overlaps;
  }
}

// The sums the backward pass ends with (the first layer's weights') have nothing left to run
// beside: they cost what a sum the devices wait in costs, as the simulator charges them. The
// second layer's run beside the first layer's backward at the started figure. Two machines that
// differ only in the started figure give the same plan, whose estimates differ by the second
// layer's sum alone; where the graph's input stands for a value with a gradient (a segment after
// others), the pass goes on beyond it, and both sums differ.
TEST(MachineMapping, TheSumsThePassEndsWithAreWaitedIn) {
  const SumRate waited{2e9, 3e-6}, started{8e9, 0};
  // With a constant first (an operator of no input: it takes no gradient and ends nothing), the
  // first layer still ends the pass.
  const auto two_layers = [](const std::string& input, bool constant_first) {
    pcg::Graph g;
    const int c = constant_first ? static_cast<int>(g.add_node(library(), "const_imm", {{"n", 4}}, {}, "identity")) : -1;
    const int x = g.add_input(input, shape({64, 4}));
    const int w1 = g.add_input("w1", shape({4, 4}), true);
    const int w2 = g.add_input("w2", shape({4, 4}), true);
    int m1 = g.add_node(library(), "matmul", {}, {{x, 0}, {w1, 0}}, "m1");
    if (constant_first) m1 = g.add_node(library(), "matmul", {}, {{m1, 0}, {c, 0}}, "m1c");
    g.mark_output({g.add_node(library(), "matmul", {}, {{m1, 0}, {w2, 0}}, "m2"), 0});
    return g;
  };
  Machine machine = small_machine(2);
  machine.device.overlaps_communication = false;
  machine.device.peak_flops = 1e6;  // slow devices: splitting the batch pays
  const double bytes = 16 * kBytesPerElement;
  const double waited_minus_started = with_node_sums(machine, waited, waited).link_between(0, 1).started_ring_allreduce_seconds(bytes, 2) -
                                      with_node_sums(machine, waited, started).link_between(0, 1).started_ring_allreduce_seconds(bytes, 2);
  ASSERT_GT(waited_minus_started, 0);
  for (const auto& [first_segment, constant_first] : {std::pair{true, false}, std::pair{false, false}, std::pair{true, true}}) {
    const pcg::Graph g = two_layers(first_segment ? "x" : "segment_input_with_gradient_x", constant_first);
    std::vector<Mapping> found;
    for (const SumRate& rate : {waited, started}) {
      const Machine m = with_node_sums(machine, waited, rate);
      const CostModel model(library(), m);
      MappingOptions batch_only;
      batch_only.degrees = {2};
      batch_only.admit = [](const pcg::Node&, const ParallelConfig& c) { return c.outputs[0].D[0] == 2; };
      MachineMapper mapper(library(), model, batch_only);
      found.push_back(mapper.map(g));
      for (const char* layer : {"m1", "m2"})
        ASSERT_EQ(found.back().placements[g.find(layer)->index()].config.inputs[1].R, 2) << layer << ": data parallelism should win";
    }
    ASSERT_EQ(found[0].placements, found[1].placements);
    const double sums_at_the_started_figure = first_segment ? 1 : 2;
    EXPECT_NEAR(found[0].estimate - found[1].estimate, sums_at_the_started_figure * waited_minus_started, 1e-9 * found[0].estimate)
        << (first_segment ? "the whole graph" : "a segment after others") << (constant_first ? ", a constant first" : "");
  }
}

// The whole graph does not fit on one device, but its data-parallel plan fits on four. Shares of
// a device in proportion to each node's unsplit need would deny the matmul its weight copies.
TEST(MachineMapping, WeightsAreCopiedWhenThePlanFitsThoughTheUnsplitGraphDoesNot) {
  pcg::Graph g;
  const int x = g.add_input("x", shape({4096, 256}));
  const int w = g.add_input("w", shape({256, 4096}), true);
  int at = g.add_node(library(), "relu", {}, {{x, 0}}, "in");
  const int m = g.add_node(library(), "matmul", {}, {{at, 0}, {w, 0}}, "m");
  at = m;
  for (int i = 0; i < 5; ++i) at = g.add_node(library(), "relu", {}, {{at, 0}}, "r" + std::to_string(i));
  const int v = g.add_input("v", shape({4096, 16}), true);
  g.mark_output({g.add_node(library(), "matmul", {}, {{at, 0}, {v, 0}}, "out"), 0});
  Machine machine = small_machine(4);
  machine.device.memory_bytes = 150.0 * (1 << 20);
  const CostModel model(library(), machine);
  const std::vector<double> unsplit = plan_memory(materialize(g, unsplit_placements(g), library()), model);
  ASSERT_GT(*std::max_element(unsplit.begin(), unsplit.end()), machine.device.memory_bytes);
  MachineMapper mapper(library(), model);
  const Mapping found = mapper.map(g);
  ASSERT_TRUE(std::isfinite(found.estimate));
  EXPECT_EQ(found.placements[static_cast<std::size_t>(m)].config.inputs[1].R, 4);
  const std::vector<double> mapped = plan_memory(materialize(g, found.placements, library()), model);
  EXPECT_LE(*std::max_element(mapped.begin(), mapped.end()), machine.device.memory_bytes);
}

// Four layers whose fastest mapping needs a tenth more than a device holds: mapped without shares
// first, it does not fit; mapped again with each layer held to its share of a device, it does.
// The same mapper's choices under the shares are not those it had without them. The layers follow
// others (their input stands for a value with a gradient), so the pass goes on beside their sums.
TEST(MachineMapping, UnderMemorySharesTheChoicesAreThoseTheSharesAllow) {
  pcg::Graph g;
  int at = g.add_input("segment_input_with_gradient_x", shape({4096, 2048}));
  for (int layer = 0; layer < 4; ++layer) {
    const int w = g.add_input("w" + std::to_string(layer), shape({2048, 2048}), true);
    at = g.add_node(library(), "matmul", {}, {{at, 0}, {w, 0}}, "m" + std::to_string(layer));
  }
  g.mark_output({at, 0});
  Machine machine = small_machine(4);
  const CostModel roomy(library(), machine);
  MachineMapper unbounded(library(), roomy);
  const Mapping fastest = unbounded.map(g);
  const std::vector<double> fastest_bytes = plan_memory(materialize(g, fastest.placements, library()), roomy);
  machine.device.memory_bytes = 0.9 * *std::max_element(fastest_bytes.begin(), fastest_bytes.end());
  const CostModel tight(library(), machine);
  MachineMapper mapper(library(), tight);
  const Mapping found = mapper.map(g);
  ASSERT_TRUE(std::isfinite(found.estimate));
  EXPECT_GT(found.estimate, fastest.estimate);
  const std::vector<double> bytes = plan_memory(materialize(g, found.placements, library()), tight);
  EXPECT_LE(*std::max_element(bytes.begin(), bytes.end()), machine.device.memory_bytes);
}

}  // namespace
}  // namespace loom::search
