#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "loom/interpreter/graph_eval.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/interpreter/rule_files.hpp"
#include "loom/models/registry.hpp"
#include "loom/models/values.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/gradient_flow.hpp"
#include "loom/search/graph_split.hpp"
#include "loom/search/joint_search.hpp"
#include "loom/search/plan_cost.hpp"
#include "loom/search/task_graph.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

// Unity figure 1 (b = 64, ci = 784, h = 512, co = 10): matmul, relu, matmul.
pcg::Graph figure1() { return models::build_model(library(), "mlp_fig1"); }

// Two devices whose compute is slow next to their link, so that using both pays for this small
// model, as the figure assumes (on V100s one device would run it fastest). The figure weighs
// plans by the bytes they move, as if no transfer overlapped computation; with the backward pass
// hiding gradient sums, data parallelism over the fused operator would be the faster plan.
Machine figure1_machine() {
  Machine m = load_machine("summit").with_devices_per_node(2);
  m.device.peak_flops = 0.5e12;
  m.device.overlaps_communication = false;
  return m;
}

// The figure weighs data against reduction parallelism: splits of the batch or of a summed
// index. (With output features split as well, Megatron's column-then-row split of the two
// matmuls moves only the small output and beats both plans of the figure.)
JointOptions figure1_options() {
  JointOptions o;
  o.mapping.admit = [](const pcg::Node&, const ParallelConfig& c) {
    for (std::size_t d = 1; d < c.outputs[0].D.size(); ++d)
      if (c.outputs[0].D[d] > 1) return false;
    return true;
  };
  return o;
}

TEST(JointSearch, Figure1KeepsMatmulAndReluApartAndUsesReductionParallelism) {
  const pcg::Graph g = figure1();
  const Machine machine = figure1_machine();
  const CostModel model(library(), machine);
  const JointResult r = joint_search(library(), g, unity_rules(), model, figure1_options());
  for (const pcg::Node& n : r.graph.nodes()) EXPECT_NE(n.op, "matmul_relu");
  ASSERT_TRUE(r.graph.find("fc1.matmul").has_value());
  const int fc1 = *r.graph.find("fc1.matmul");
  EXPECT_EQ(r.placements[static_cast<std::size_t>(fc1)].config.outputs[0].V, 2) << r.placements[static_cast<std::size_t>(fc1)].config.split;
  const pcg::Graph plan = materialize(r.graph, r.placements, library());
  const double bytes = communication_bytes(build_task_graph(plan, model));
  EXPECT_GT(bytes, 0);
  EXPECT_LE(bytes, 131072.0 * 4);  // at most the figure's 4bh elements
}

TEST(JointSearch, Figure1SequentialFusesAndDataParallelismMovesBothWeights) {
  const pcg::Graph g = figure1();
  const Machine machine = figure1_machine();
  const CostModel model(library(), machine);
  const SequentialResult seq = sequential_optimization(library(), g, unity_rules(), model);
  bool fused = false;
  for (const pcg::Node& n : seq.graph.nodes()) fused |= n.op == "matmul_relu";
  EXPECT_TRUE(fused);
  const pcg::Graph data = materialize(seq.graph, data_parallel(library(), seq.graph, machine), library());
  const double sequential_bytes = communication_bytes(build_task_graph(data, model));
  EXPECT_EQ(sequential_bytes, 813056.0 * 4);  // 2 (ci h + h co) elements: both weights' gradients
  const JointResult joint = joint_search(library(), g, unity_rules(), model, figure1_options());
  const double joint_bytes = communication_bytes(build_task_graph(materialize(joint.graph, joint.placements, library()), model));
  EXPECT_LT(joint_bytes * 6, sequential_bytes);  // the figure's sixfold saving, at least
}

// Layers of matmul then relu over a [rows, widths[0]] input, layer l taking widths[l] features
// to widths[l + 1] with its own weight.
pcg::Graph dense_relu_chain(std::int64_t rows, const std::vector<std::int64_t>& widths) {
  pcg::Graph g;
  int at = g.add_input("x", shape({rows, widths.front()}));
  for (std::size_t layer = 0; layer + 1 < widths.size(); ++layer) {
    const int w = g.add_input("w" + std::to_string(layer), shape({widths[layer], widths[layer + 1]}), true);
    const int m = g.add_node(library(), "matmul", {}, {{at, 0}, {w, 0}});
    at = g.add_node(library(), "relu", {}, {{m, 0}});
  }
  g.mark_output({at, 0});
  return g;
}

TEST(JointSearch, SegmentsJoinBackIntoTheSameGraph) {
  const pcg::Graph g = dense_relu_chain(8, std::vector<std::int64_t>(13, 8));
  const auto segments = split_graph(g, 5);
  EXPECT_EQ(segments.size(), 4u);
  for (const Segment& s : segments) EXPECT_GE(s.graph.size() - s.reads.size(), 5u);
  const pcg::Graph joined = join_segments(g, segments);
  EXPECT_EQ(joined.size(), g.size());
  const models::NamedValues values = models::random_values(library(), g, 9);
  const auto a = spec::evaluate_graph<spec::RealDomain>(library(), g, values);
  const auto b = spec::evaluate_graph<spec::RealDomain>(library(), joined, values);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a[0].data.size(); ++i) EXPECT_NEAR(a[0].data[i], b[0].data[i], 1e-12);
}

// AlphaFold2's recycling passes only feed the next pass through stop-gradients: cut into segments,
// their operators charge no gradient for the weights they share with the pass that trains them,
// wherever the stop-gradient falls, and the segments join back into the model.
TEST(JointSearch, SegmentsOfARecyclingPassChargeNoGradientForTheWeightsTheyRead) {
  const pcg::Graph g = models::build_model(
      library(), "alphafold2",
      {{"batch", 4}, {"sequences", 3}, {"residues", 4}, {"hidden", 8}, {"heads", 2}, {"opm", 2}, {"layers", 2}, {"recycles", 2}});
  const CostModel model(library(), load_machine("summit"));
  const std::vector<bool> cut_off = cut_off_from_gradients(g, model.detached_inputs());
  const auto segments = split_graph(g, 20, model.trained_in(g), model.detached_inputs());
  ASSERT_GT(segments.size(), 3u);
  std::size_t forward_only = 0, training = 0;
  for (const Segment& s : segments)
    for (const pcg::Node& n : s.graph.nodes()) {
      if (n.is_graph_input()) continue;
      const pcg::Node& whole = g.node(s.origin[n.id.index()]);
      const std::vector<bool> flags = model.gradient_inputs(s.graph, n);
      if (cut_off[whole.id.index()]) {
        ++forward_only;
        EXPECT_EQ(std::count(flags.begin(), flags.end(), true), 0) << whole.describe();
      } else {
        ++training;
        EXPECT_EQ(flags, model.gradient_inputs(g, whole)) << whole.describe();
      }
    }
  EXPECT_GT(forward_only, 0u);
  EXPECT_GT(training, 0u);
  const pcg::Graph joined = join_segments(g, segments);
  EXPECT_EQ(joined.size(), g.size());
  for (const pcg::Node& n : joined.nodes()) {
    if (n.is_graph_input()) {
      EXPECT_TRUE(g.find(n.name).has_value()) << n.name;
    }
  }
}

// The whole graph, as the sequential baseline's rewriting costs it node by node: a recycling pass's
// operators are charged their forward alone, each asked alone, as the walk over the whole graph
// finds them cut off; the training pass's operators their backward too.
TEST(JointSearch, ARecyclingPassAskedNodeByNodeChargesNoBackward) {
  const pcg::Graph g = models::build_model(
      library(), "alphafold2",
      {{"batch", 4}, {"sequences", 3}, {"residues", 4}, {"hidden", 8}, {"heads", 2}, {"opm", 2}, {"layers", 2}, {"recycles", 2}});
  const CostModel model(library(), load_machine("summit"));
  const std::vector<bool> cut_off = cut_off_from_gradients(g, model.detached_inputs());
  std::size_t forward_only = 0, training = 0;
  for (const pcg::Node& n : g.nodes()) {
    ASSERT_EQ(cut_off_from_gradients(g, n, model.detached_inputs()), cut_off[n.id.index()]) << n.describe();
    if (n.is_graph_input() || !model.is_compute(n)) continue;
    const std::vector<bool> flags = model.gradient_inputs(g, n);
    const bool takes = std::count(flags.begin(), flags.end(), true) > 0;
    std::vector<pcg::ParallelShape> inputs;
    for (pcg::PortRef in : n.inputs) inputs.push_back(g.shape_of(in));
    if (cut_off[n.id.index()] && takes) {
      ++forward_only;
      EXPECT_EQ(model.local_seconds(g, n), model.compute(n, inputs, std::vector<bool>(flags.size(), false)).seconds) << n.describe();
      EXPECT_LT(model.local_seconds(g, n), model.compute(g, n).seconds + model.compute(g, n).backward_seconds) << n.describe();
    } else if (takes) {
      ++training;
      EXPECT_GT(model.local_seconds(g, n), model.compute(g, n).seconds) << n.describe();
    }
  }
  EXPECT_GT(forward_only, 0u);
  EXPECT_GT(training, 0u);
}

// On one device the joint search's estimate of a plan is the simulated iteration of that plan; a
// recycling pass runs no backward in either.
TEST(JointSearch, TheEstimateOfARecyclingModelChargesItsForwardOnlyPassesAsTheSimulatorDoes) {
  const pcg::Graph g = models::build_model(
      library(), "alphafold2",
      {{"batch", 4}, {"sequences", 8}, {"residues", 16}, {"hidden", 32}, {"heads", 4}, {"opm", 4}, {"layers", 2}, {"recycles", 2}});
  const CostModel model(library(), load_machine("summit").with_devices_per_node(1));
  JointOptions options;
  options.substitution.budget = 1;
  const JointResult joint = joint_search(library(), g, {}, model, options);
  const PlanCost simulated = plan_cost(materialize(joint.graph, joint.placements, library(), model.moves()), model);
  EXPECT_NEAR(joint.estimate, simulated.seconds, 0.01 * simulated.seconds);
}

// Segments searched on several threads, each with a cost model and a mapper of its own, give the
// result the segments searched one after another give: the rules rewrite every segment, and the
// cuts between them are partitioned by the Viterbi pass over all the segments' costs.
TEST(JointSearch, SegmentsSearchedOnSeveralThreadsGiveTheSameResult) {
  // Layers of different widths, so that no segment's result could stand for another's.
  const pcg::Graph g = dense_relu_chain(256, {64, 96, 128, 64, 32, 96, 64, 128, 96, 32, 64, 128, 64});
  const CostModel model(library(), load_machine("summit").with_devices_per_node(4));
  JointOptions options;
  options.min_segment = 5;
  const JointResult one = joint_search(library(), g, unity_rules(), model, options);
  ASSERT_EQ(one.segments, 4u);
  ASSERT_NE(one.graph, g) << "the rules should rewrite the layers";
  for (int jobs : {2, 3}) {
    options.jobs = jobs;
    std::size_t calls = 0;
    const JointResult many = joint_search(library(), g, unity_rules(), model, options, [&](const JointProgress& p) {
      ++calls;
      EXPECT_GE(p.segment, 1u);
      EXPECT_LE(p.segment, p.segments);
    });
    EXPECT_GT(calls, 0u);
    EXPECT_EQ(many.graph, one.graph) << jobs << " jobs";
    EXPECT_EQ(many.placements, one.placements) << jobs << " jobs";
    EXPECT_EQ(many.estimate, one.estimate) << jobs << " jobs";
    EXPECT_EQ(many.cuts, one.cuts) << jobs << " jobs";
    ASSERT_EQ(many.sequence.size(), one.sequence.size()) << jobs << " jobs";
    for (std::size_t k = 0; k < one.sequence.size(); ++k) {
      EXPECT_EQ(many.sequence[k].rule, one.sequence[k].rule) << jobs << " jobs, step " << k;
      EXPECT_EQ(many.sequence[k].match, one.sequence[k].match) << jobs << " jobs, step " << k;
      EXPECT_EQ(many.sequence[k].reversed, one.sequence[k].reversed) << jobs << " jobs, step " << k;
    }
    EXPECT_EQ(many.explored, one.explored) << jobs << " jobs";
    EXPECT_EQ(many.generated, one.generated) << jobs << " jobs";
    EXPECT_EQ(many.rewrites, one.rewrites) << jobs << " jobs";
  }
}

}  // namespace
}  // namespace loom::search
