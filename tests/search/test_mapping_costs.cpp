#include <gtest/gtest.h>

#include "loom/interpreter/library.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/rvd_search.hpp"
#include "mapping_costs.hpp"

// What the machine mapping charges for the sums of a copied weight's gradients: a ring per piece
// among its copies, all at once, taking turns at the network ports they share.
namespace loom::search::mapping {
namespace {

const spec::Library& library() {
  static spec::Library lib = spec::Library::load(spec::Library::paths_or_bundled({}));
  return lib;
}

Machine two_nodes_of_four(int ports) {
  Machine m = load_machine("summit").with_nodes(2).with_devices_per_node(4);
  m.network_ports_per_node = ports;
  return m;
}

// A weight split two ways and copied four times over two nodes of four devices: its copies of
// each half sum as a ring, {0, 2, 4, 6} and {1, 3, 5, 7} (replicas outermost), both at once.
// Through one port per node their steps between the nodes take turns: twice one ring's time.
// With a port per device they do not meet.
TEST(MoveCosts, GradientSumsCrossingANodeTogetherTakeTurnsAtItsPort) {
  const pcg::ParallelShape weight = pcg::ParallelShape::partitioned({1024, 1024}, {1, 2}, 1, 4);
  const double half_bytes = 512.0 * 1024 * kBytesPerElement;
  for (const int ports : {1, 4}) {
    const Machine machine = two_nodes_of_four(ports);
    const RvdSearch paths(library(), machine);
    MoveCosts costs(paths);
    const int need = costs.shapes().id(weight);
    const double ring = machine.inter_node.started_ring_allreduce_seconds(half_bytes, 4);
    EXPECT_DOUBLE_EQ(costs.weight_sum_seconds(need, 0), (ports == 1 ? 2 : 1) * ring) << ports << " ports";
  }
  // Copied within one node only, the rings run over the slowest link among its devices and no port.
  const Machine machine = two_nodes_of_four(1);
  const RvdSearch paths(library(), machine);
  MoveCosts costs(paths);
  const int on_one_node = costs.shapes().id(pcg::ParallelShape::partitioned({1024, 1024}, {1, 2}, 1, 2));
  EXPECT_DOUBLE_EQ(costs.weight_sum_seconds(on_one_node, 0), machine.link_between(0, 3).started_ring_allreduce_seconds(half_bytes, 2));
  // One copy: nothing to sum.
  EXPECT_EQ(costs.weight_sum_seconds(costs.shapes().id(pcg::ParallelShape::partitioned({1024, 1024}, {1, 2})), 0), 0);
}

// A node's weights, as the simulator sums them: the pieces of split weights whose copies lie on
// the same devices packed into one ring (its latency paid once), a whole weight copied everywhere
// summed where it lies, a ring of its own.
TEST(MoveCosts, ANodesSplitWeightsOnTheSameDevicesArePackedIntoOneRing) {
  Machine machine = two_nodes_of_four(4);
  machine.inter_node.started_allreduce = {machine.inter_node.bandwidth, 5e-6};  // a latency to pay
  const RvdSearch paths(library(), machine);
  MoveCosts costs(paths);
  const int half = costs.shapes().id(pcg::ParallelShape::partitioned({1024, 1024}, {1, 2}, 1, 4));
  const int bias_half = costs.shapes().id(pcg::ParallelShape::partitioned({1024}, {2}, 1, 4));
  const int whole = costs.shapes().id(pcg::ParallelShape::partitioned({1024}, {1}, 1, 8));
  const double half_bytes = 512.0 * 1024 * kBytesPerElement, bias_bytes = 512.0 * kBytesPerElement;
  const Link& link = machine.inter_node;
  const std::vector<int> split = {half, bias_half};
  EXPECT_DOUBLE_EQ(costs.weight_sums_seconds(split, 0), link.started_ring_allreduce_seconds(half_bytes + bias_bytes, 4));
  EXPECT_LT(costs.weight_sums_seconds(split, 0), costs.weight_sum_seconds(half, 0) + costs.weight_sum_seconds(bias_half, 0));
  const std::vector<int> with_whole = {half, whole};
  EXPECT_DOUBLE_EQ(costs.weight_sums_seconds(with_whole, 0), costs.weight_sum_seconds(half, 0) + costs.weight_sum_seconds(whole, 0));
  const std::vector<int> one = {half};
  EXPECT_DOUBLE_EQ(costs.weight_sums_seconds(one, 0), costs.weight_sum_seconds(half, 0));
  // Where the node's backward ends the pass, the whole gradient, summed once that backward is done,
  // is waited in; the split weights' pieces wait for their copies' backward, and start beside it.
  EXPECT_DOUBLE_EQ(costs.weight_sum_seconds(whole, 0, true), link.ring_allreduce_seconds(1024.0 * kBytesPerElement, 8));
  EXPECT_NE(costs.weight_sum_seconds(whole, 0, true), costs.weight_sum_seconds(whole, 0));
  EXPECT_DOUBLE_EQ(costs.weight_sums_seconds(with_whole, 0, true),
                   costs.weight_sum_seconds(half, 0) + costs.weight_sum_seconds(whole, 0, true));
  EXPECT_DOUBLE_EQ(costs.weight_sums_seconds(split, 0, true), costs.weight_sums_seconds(split, 0));
}

}  // namespace
}  // namespace loom::search::mapping
