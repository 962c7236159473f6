#include <gtest/gtest.h>

#include <cmath>

#include "loom/interpreter/graph_eval.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/interpreter/rule_files.hpp"
#include "loom/models/values.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/graph_hash.hpp"
#include "loom/search/graph_split.hpp"
#include "loom/search/joint_search.hpp"
#include "loom/search/machine_mapping.hpp"
#include "loom/search/replay.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

pcg::ParallelShape split(std::vector<std::int64_t> dims, std::size_t dim, std::int64_t degree) {
  pcg::ParallelShape s = shape(std::move(dims));
  s.D[dim] = degree;
  return s;
}

// A chain of `layers` matmul -> relu layers of width h.
pcg::Graph chain(int layers, std::int64_t b, std::int64_t h) {
  pcg::Graph g;
  int at = g.add_input("x", shape({b, h}));
  for (int layer = 0; layer < layers; ++layer) {
    const int w = g.add_input("w" + std::to_string(layer), shape({h, h}), true);
    const int m = g.add_node(library(), "matmul", {}, {{at, 0}, {w, 0}});
    at = g.add_node(library(), "relu", {}, {{m, 0}});
  }
  g.mark_output({at, 0});
  return g;
}

Machine machine(int devices) { return load_machine("summit").with_devices_per_node(devices); }

TEST(CutPartitioning, PinnedMappingEqualsBruteForce) {
  const pcg::Graph g = chain(2, 8, 8);
  const Machine target = machine(4);
  const CostModel model(library(), target);
  MappingOptions options;
  options.degrees = {2, 4};
  Pins pins;
  pins.inputs[0] = {split({8, 8}, 0, 4), 0};
  pins.outputs[0] = {split({8, 8}, 1, 2), 2};
  MachineMapper dp(library(), model, options), exhaustive(library(), model, options);
  const double found = dp.map(g, pins).estimate;
  const double reference = exhaustive.brute_force(g, pins).estimate;
  ASSERT_TRUE(std::isfinite(reference));
  EXPECT_NEAR(found, reference, 1e-12 * reference);
}

TEST(CutPartitioning, PinsAddTheMovesToAndFromThem) {
  const pcg::Graph g = chain(2, 8, 8);
  const Machine target = machine(4);
  const CostModel model(library(), target);
  MachineMapper mapper(library(), model);
  const double free = mapper.map(g).estimate;
  Pins far;
  far.inputs[0] = {shape({8, 8}), 3};  // whole on the last device
  far.outputs[0] = {split({8, 8}, 1, 2), 2};
  const double pinned = mapper.map(g, far).estimate;
  EXPECT_GT(pinned, free);
  // The cache keeps pinned and free sub-problems apart: mapping freely again gives the first result.
  EXPECT_DOUBLE_EQ(mapper.map(g).estimate, free);
}

TEST(CutPartitioning, CandidatesKeepReplicaDegreeOne) {
  const std::vector<Pin> all = cut_partitionings(shape({12, 8}), {6, 4, 2});
  ASSERT_FALSE(all.empty());
  EXPECT_TRUE(all.front().shape.is_unpartitioned());
  // dimension 0 by 6, 4 and 2; dimension 1 by 4 and 2 (8 does not divide by 6)
  EXPECT_EQ(all.size(), 6u);
  for (const Pin& p : all) {
    EXPECT_EQ(p.shape.R, 1);
    EXPECT_EQ(p.shape.V, 1);
    EXPECT_NO_THROW(p.shape.validate());
  }
}

TEST(CutPartitioning, JointSearchChoosesAPartitioningAtEveryCutAndKeepsValues) {
  const pcg::Graph g = chain(15, 64, 64);
  const Machine target = machine(4);
  const CostModel model(library(), target);
  JointOptions options;
  options.min_segment = 10;
  const JointResult r = joint_search(library(), g, unity_rules(), model, options);
  ASSERT_GE(r.segments, 2u);
  ASSERT_EQ(r.cuts.size(), r.segments - 1);
  for (const std::string& c : r.cuts) EXPECT_FALSE(c.empty());
  ASSERT_TRUE(std::isfinite(r.estimate));
  const models::NamedValues values = models::random_values(library(), g, 3);
  const auto a = spec::evaluate_graph<spec::RealDomain>(library(), g, values);
  const auto b = spec::evaluate_graph<spec::RealDomain>(library(), r.graph, values);
  ASSERT_EQ(a[0].data.size(), b[0].data.size());
  for (std::size_t i = 0; i < a[0].data.size(); ++i) EXPECT_NEAR(a[0].data[i], b[0].data[i], 1e-9);
}

TEST(CutPartitioning, SegmentSubstitutionsReplayOnTheWholeGraph) {
  const pcg::Graph g = chain(15, 64, 64);
  // Slow compute next to fast kernels' launch cost: fusing matmul and relu pays in every segment.
  Machine m = machine(1);
  m.device.kernel_overhead = 1e-3;
  const CostModel model(library(), m);
  JointOptions options;
  options.min_segment = 10;
  const JointResult r = joint_search(library(), g, unity_rules(), model, options);
  ASSERT_GE(r.segments, 2u);
  ASSERT_GE(r.sequence.size(), 2u);

  Plan plan;
  plan.source = g;
  plan.substitutions = r.sequence;
  plan.rules = rules_used(unity_rules(), r.sequence);
  plan.machine = m;
  plan.graph = r.graph;
  const Plan back = plan_from_json(plan_to_json(plan), library());
  const std::vector<ReplayStep> steps = replay_plan(back, library());
  ASSERT_EQ(steps.size(), r.sequence.size());
  for (const ReplayStep& s : steps) {
    EXPECT_FALSE(s.matched.empty());
    EXPECT_FALSE(s.inserted.empty());
    EXPECT_LT(s.after.size(), s.before.size());  // fusion removes a node
  }
  EXPECT_EQ(pcg::graph_hash(steps.back().after), pcg::graph_hash(r.graph));
}

TEST(CutPartitioning, ReplayNamesAMissingRule) {
  Plan plan;
  plan.source = chain(1, 8, 8);
  plan.substitutions = {{"fuse_matmul_relu", "algebraic", "proved", {1, 2}, ""}};
  try {
    replay_plan(plan, library());
    FAIL() << "a plan without its rule replayed";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("substitution 1 (fuse_matmul_relu)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::search
