#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/interpreter/library.hpp"
#include "loom/models/registry.hpp"
#include "loom/search/materialize.hpp"
#include "loom/search/parallel_config.hpp"
#include "loom/search/port_loads.hpp"
#include "loom/search/reshard.hpp"
#include "loom/search/rvd_search.hpp"
#include "loom/search/simulator.hpp"
#include "loom/search/task_graph.hpp"

// A node's network ports are shared by its devices: messages and ring steps between nodes take
// turns at them, in the move search's prices, the mapping's gradient sums and the simulator alike.
namespace loom::search {
namespace {

Machine two_summit_nodes(int ports) {
  Machine m = load_machine("summit").with_nodes(2);
  m.network_ports_per_node = ports;
  return m;
}

pcg::MachineView devices_from(int first, int count) {
  std::vector<int> d(static_cast<std::size_t>(count));
  std::iota(d.begin(), d.end(), first);
  return {d};
}

TEST(NetworkPorts, DevicesUseThePortsNearestThem) {
  const NetworkPorts ports = two_summit_nodes(2).network_ports();
  EXPECT_EQ(ports.port_of(0), 0);
  EXPECT_EQ(ports.port_of(2), 0);
  EXPECT_EQ(ports.port_of(3), 1);
  EXPECT_EQ(ports.port_of(5), 1);
  EXPECT_EQ(ports.port_of(6), 2);
  EXPECT_EQ(ports.port_of(11), 3);
  EXPECT_TRUE(ports.between_nodes(5, 6));
  EXPECT_FALSE(ports.between_nodes(0, 5));
  // More ports than devices: each device its own.
  EXPECT_EQ(two_summit_nodes(8).network_ports().port_of(11), 11);
  EXPECT_FALSE(load_machine("summit").network_ports().between_nodes(0, 5));
}

TEST(PortLoads, MessagesBetweenNodesTakeTurnsAtTheirPorts) {
  PortLoads one(two_summit_nodes(1).network_ports());
  PortLoads two(two_summit_nodes(2).network_ports());
  for (PortLoads* loads : {&one, &two})
    for (int d = 0; d < 6; ++d) loads->add(d, d + 6, 10);
  one.add(0, 1, 99);  // within a node: no port
  EXPECT_EQ(one.turns_on_way(0, 6), 6);
  EXPECT_EQ(one.turns_on_way(0, 1), 1);
  EXPECT_EQ(one.distinct(), (std::vector<PortLoad>{{6, 60}}));
  EXPECT_EQ(two.turns_on_way(4, 10), 3);
  EXPECT_EQ(two.distinct(), (std::vector<PortLoad>{{3, 30}}));
}

TEST(PortLoads, RingsCrossingANodeTogetherShareItsPort) {
  const NetworkPorts ports = two_summit_nodes(1).network_ports();
  // Six rings of a device on each node, as the copies of a weight split six ways within a node.
  std::vector<std::vector<int>> pairs;
  for (int q = 0; q < 6; ++q) pairs.push_back({q, q + 6});
  EXPECT_EQ(ring_port_turns(ports, pairs), std::vector<int>(6, 6));
  // One ring over both nodes in order leaves and enters each node once.
  std::vector<int> all(12);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(ring_port_turns(ports, {all}), std::vector<int>{1});
  // A ring within a node uses no port.
  EXPECT_EQ(ring_port_turns(ports, {{0, 1, 2}}), std::vector<int>{1});
  // With a port per device, the six rings do not meet.
  EXPECT_EQ(ring_port_turns(two_summit_nodes(6).network_ports(), pairs), std::vector<int>(6, 1));
}

// A value split six ways on one node, wanted the same way on the other: each device sends its
// piece to its counterpart, all six through the node's one port, each message with its latency.
TEST(PortLoads, AMoveBetweenNodesIsPricedByWhatEachPortCarries) {
  const pcg::ParallelShape split = pcg::ParallelShape::partitioned({12, 12}, {6, 1});
  const double piece_bytes = 24 * kBytesPerElement;
  for (const int ports : {1, 2, 6}) {
    const Machine m = two_summit_nodes(ports);
    const int sharing = 6 / ports;
    const double expected = sharing * m.inter_node.latency + sharing * piece_bytes / m.inter_node.bandwidth;
    EXPECT_DOUBLE_EQ(reshard_seconds(split, devices_from(0, 6), split, devices_from(6, 6), m), expected) << ports << " ports";
  }
  // Within a node each pair of devices is a link of its own.
  const Machine m = two_summit_nodes(1).with_nodes(1).with_devices_per_node(4);
  const pcg::ParallelShape halves = pcg::ParallelShape::partitioned({12, 12}, {2, 1});
  EXPECT_DOUBLE_EQ(reshard_seconds(halves, devices_from(0, 2), halves, devices_from(2, 2), m),
                   m.link_between(0, 2).transfer_seconds(72 * kBytesPerElement));
}

// Partial sums on two devices of each node, summed between the nodes: two rings, {0, 6} and
// {1, 7}. Through one port per node they take turns, twice the time of one ring; with a port per
// device they do not meet. The simulator runs the rings' steps the same way.
TEST(PortLoads, CollectiveRingsSharingAPortArePricedAndSimulatedInTurn) {
  const pcg::ParallelShape partial = pcg::ParallelShape::partitioned({8, 8}, {2, 1}, 2);
  const pcg::ParallelShape summed = pcg::ParallelShape::partitioned({8, 8}, {2, 1}, 1, 2);
  const pcg::MachineView view{{0, 1, 6, 7}};
  const double box_bytes = 32 * kBytesPerElement;
  for (const int ports : {1, 6}) {
    const Machine m = two_summit_nodes(ports);
    const double ring = m.inter_node.ring_allreduce_seconds(box_bytes, 2);
    const ReshardPattern pattern = reshard_pattern(partial, view, summed, view, m);
    ASSERT_EQ(pattern.collective, pcg::Collective::allreduce);
    EXPECT_DOUBLE_EQ(pattern.seconds(partial, summed, m), (ports == 1 ? 2 : 1) * ring) << ports << " ports";

    TaskGraph g;
    g.devices = m.devices();
    g.ports = m.network_ports();
    for (const auto& [a, b] : std::vector<std::pair<int, int>>{{0, 6}, {6, 0}, {1, 7}, {7, 1}}) {
      SimTask step;
      step.kind = TaskKind::Communication;
      step.device = a;
      step.peer = b;
      step.seconds = ring;
      g.tasks.push_back(step);
    }
    EXPECT_DOUBLE_EQ(simulate(g).makespan, pattern.seconds(partial, summed, m)) << ports << " ports";
  }
}

// In an all-to-all each device sends a block to each other: between two nodes of six devices,
// each node's port sends 36 blocks, one after another; with a port per three devices 18; with a
// port per device 6, fewer than each device's own 11 messages.
TEST(PortLoads, AnAllToAllBetweenNodesTakesTurnsForEveryBlockAtAPort) {
  std::vector<int> twelve(12);
  std::iota(twelve.begin(), twelve.end(), 0);
  EXPECT_EQ(all_to_all_port_blocks(two_summit_nodes(1).network_ports(), twelve), 36);
  EXPECT_EQ(all_to_all_port_blocks(two_summit_nodes(2).network_ports(), twelve), 18);
  EXPECT_EQ(all_to_all_port_blocks(two_summit_nodes(6).network_ports(), twelve), 6);
  EXPECT_EQ(all_to_all_port_blocks(two_summit_nodes(1).network_ports(), {0, 1, 2, 3}), 0);

  const pcg::ParallelShape rows = pcg::ParallelShape::partitioned({1200, 1200}, {12, 1});
  const pcg::ParallelShape columns = pcg::ParallelShape::partitioned({1200, 1200}, {1, 12});
  const double box_bytes = 100 * 1200 * kBytesPerElement;
  for (const auto& [ports, blocks] : std::vector<std::pair<int, int>>{{1, 36}, {2, 18}, {6, 6}}) {
    const Machine m = two_summit_nodes(ports);
    const ReshardPattern pattern = reshard_pattern(rows, devices_from(0, 12), columns, devices_from(0, 12), m);
    ASSERT_EQ(pattern.collective, pcg::Collective::all_to_all);
    const double own_links = 11 * m.inter_node.latency + 11.0 / 12 * box_bytes / m.inter_node.bandwidth;
    const double at_port = blocks * (m.inter_node.latency + box_bytes / 12 / m.inter_node.bandwidth);
    EXPECT_DOUBLE_EQ(pattern.seconds(rows, columns, m), std::max(own_links, at_port)) << ports << " ports";
    if (ports < 6) {
      EXPECT_GT(at_port, own_links) << "the test should price the port's turns";
    }
  }
}

const spec::Library& library() {
  static spec::Library lib = spec::Library::load(spec::Library::paths_or_bundled({}));
  return lib;
}

ParallelConfig config_split(const pcg::Graph& g, int node, const std::string& split, std::int64_t degree) {
  for (const ParallelConfig& c : node_configs(library(), g, g.node(node), {degree}))
    if (c.split == split) return c;
  throw std::runtime_error("no split " + split + " of node " + std::to_string(node));
}

// The time from the first to the last of the forward communication tasks a simulation runs (of
// the nodes `of` only, where it names some).
double forward_communication_span(const TaskGraph& tg, const std::set<pcg::NodeId>& of = {}) {
  const Timeline t = simulate(tg);
  double first = 1e300, last = 0;
  for (std::size_t i = 0; i < tg.tasks.size(); ++i)
    if (tg.tasks[i].kind == TaskKind::Communication && !tg.tasks[i].backward && (of.empty() || of.count(tg.tasks[i].node))) {
      first = std::min(first, t.start[i]);
      last = std::max(last, t.finish[i]);
    }
  return last > first ? last - first : 0;
}

// relu(relu(x)): the input is node 0, the relus nodes 1 and 2.
pcg::Graph two_relus(const std::vector<std::int64_t>& dims) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned(dims));
  const int a = g.add_node(library(), "relu", {}, {{x, 0}});
  g.mark_output({g.add_node(library(), "relu", {}, {{a, 0}}), 0});
  return g;
}

// A plan that moves a value split six ways on one node to six devices of the other: the
// simulator runs the materialized move's messages through the nodes' ports in the time the move
// search priced it.
TEST(PortLoads, TheSimulatorRunsAMaterializedMoveBetweenNodesInItsPricedTime) {
  const pcg::Graph g = two_relus({12, 12});
  const int x = 0, a = 1;
  for (const int ports : {1, 6}) {
    const Machine m = two_summit_nodes(ports);
    const RvdSearch moves(library(), m);
    const ParallelConfig split = config_split(g, a, "input 0 dim 0 / 6", 6);
    const pcg::Graph plan = materialize(g, {{unsplit_config(g, g.node(x)), 0}, {split, 0}, {split, 6}}, library(), moves);
    const auto path = moves.cheapest(split.outputs[0], devices_from(0, 6), split.outputs[0], devices_from(6, 6));
    ASSERT_TRUE(path);
    EXPECT_DOUBLE_EQ(path->seconds, 6 / ports * (m.inter_node.latency + 24 * kBytesPerElement / m.inter_node.bandwidth));
    EXPECT_NEAR(forward_communication_span(build_task_graph(plan, CostModel(library(), m))), path->seconds, 1e-12) << ports << " ports";
  }
}

// Data parallelism over eight nodes: each device loads its copy of the weight, as one replicate
// of the weight, where moving copies from device 0 would take turns at its node's port.
TEST(PortLoads, AWeightCopiedToEveryNodeIsLoadedInPlace) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({48, 48}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({48, 48}), true);
  const int y = g.add_node(library(), "matmul", {}, {{x, 0}, {w, 0}});
  g.mark_output({y, 0});
  const Machine m = load_machine("summit").with_nodes(8);
  const pcg::Graph plan = materialize(
      g, {{unsplit_config(g, g.node(x)), 0}, {unsplit_config(g, g.node(w)), 0}, {config_split(g, y, "input 0 dim 0 / 48", 48), 0}},
      library(), RvdSearch(library(), m));
  // The product reads the weight's copies from one replicate of the weight, which moves nothing.
  std::vector<std::string> chain;
  pcg::NodeId copies = pcg::kNoNode;
  for (const pcg::Node& n : plan.nodes())
    if (n.op == "matmul")
      for (pcg::PortRef at = n.inputs[1]; !plan.node(at.node).is_graph_input(); at = plan.node(at.node).inputs[0]) {
        chain.push_back(plan.node(at.node).op);
        copies = at.node;
      }
  EXPECT_EQ(chain, std::vector<std::string>{"replicate"});
  const TaskGraph tg = build_task_graph(plan, CostModel(library(), m));
  for (const SimTask& t : tg.tasks)
    if (t.kind == TaskKind::Communication && !t.backward && t.node == copies) ADD_FAILURE() << t.label << " moves a copy of the weight";
}

// The same all-to-all in a plan. The shortest path, its steps priced apart, cuts it into smaller
// all-to-alls, but their whole change is one all-to-all, which the plan runs as one (as Unity
// fuses parallel operators): that chain is priced as the one all-to-all, its busiest port's blocks
// one after another. Chosen as it runs, the chain costs no more and has no more steps, and the
// simulator runs it in its priced time.
TEST(PortLoads, TheSimulatorRunsAnAllToAllBetweenNodesInItsPricedTime) {
  const pcg::Graph g = two_relus({1200, 1200});
  const int x = 0, a = 1, b = 2;
  for (const int ports : {1, 6}) {
    const Machine m = two_summit_nodes(ports);
    const RvdSearch moves(library(), m);
    const ParallelConfig rows = config_split(g, a, "input 0 dim 0 / 12", 12);
    const ParallelConfig columns = config_split(g, b, "input 0 dim 1 / 12", 12);
    const pcg::Graph plan = materialize(g, {{unsplit_config(g, g.node(x)), 0}, {rows, 0}, {columns, 0}}, library(), moves);
    const auto path = moves.cheapest(rows.outputs[0], devices_from(0, 12), columns.outputs[0], devices_from(0, 12));
    const auto shortest = RvdSearch(library(), m, ChainPricing::steps_apart)
                              .cheapest(rows.outputs[0], devices_from(0, 12), columns.outputs[0], devices_from(0, 12));
    ASSERT_TRUE(path && shortest);
    const double one_all_to_all = reshard_seconds(rows.outputs[0], devices_from(0, 12), columns.outputs[0], devices_from(0, 12), m);
    if (ports == 1) {
      EXPECT_GT(shortest->steps.size(), 1u) << "the shortest path should be smaller all-to-alls, cheaper apart";
      EXPECT_LT(shortest->step_seconds, shortest->seconds);
    }
    EXPECT_DOUBLE_EQ(shortest->seconds, one_all_to_all);
    EXPECT_DOUBLE_EQ(path->seconds, one_all_to_all);
    EXPECT_LE(path->steps.size(), shortest->steps.size());
    std::vector<pcg::NodeId> relus;
    for (const pcg::Node& n : plan.nodes())
      if (n.op == "relu") relus.push_back(n.id);
    ASSERT_EQ(relus.size(), 2u);
    std::set<pcg::NodeId> chain;  // the layout changes between the two
    for (pcg::PortRef at = plan.node(relus[1]).inputs[0]; at.node != relus[0]; at = plan.node(at.node).inputs[0]) chain.insert(at.node);
    EXPECT_NEAR(forward_communication_span(build_task_graph(plan, CostModel(library(), m)), chain), path->seconds, 1e-9 * path->seconds)
        << ports << " ports";
  }
}

// Copies of an activation wanted on the other node (the last product of Unity's MLP split by
// columns on four devices there): the value crosses in pieces and is gathered there. The
// simulator runs the chain within the time the move search priced it, no faster than its crossing
// step alone: a later step may start on the first piece to arrive while the others still cross.
TEST(PortLoads, CopiesGatheredOnTheOtherNodeAreSimulatedInTheirPricedTime) {
  const pcg::Graph model = models::build_model(library(), "mlp_fig1", {{"batch", 256}, {"in", 32}, {"hidden", 1024}, {"out", 64}});
  const Machine m = load_machine("summit").with_nodes(2).with_devices_per_node(4);
  std::vector<Placement> placements = unsplit_placements(model);
  const pcg::Node& last = model.node(model.outputs().at(0).node);
  std::optional<ParallelConfig> by_columns;
  for (const ParallelConfig& c : node_configs(library(), model, last, {4}))
    if (c.tasks() == 4 && c.inputs.at(0).R == 4) by_columns = c;
  ASSERT_TRUE(by_columns);
  placements[last.id.index()] = {*by_columns, 4};
  const CostModel cost(library(), m);
  const pcg::Graph plan = materialize(model, placements, library(), cost.moves());
  const pcg::PortRef activation = last.inputs.at(0);
  const auto path = cost.moves().cheapest(model.shape_of(activation), devices_from(0, 1), by_columns->inputs.at(0), devices_from(4, 4));
  ASSERT_TRUE(path);
  ASSERT_GE(path->steps.size(), 2u);
  std::set<pcg::NodeId> chain;  // the layout changes before the last product's first input
  pcg::NodeId product = pcg::kNoNode;
  for (const pcg::Node& n : plan.nodes())
    if (n.op == last.op && n.view_or_default().devices.front() == 4) product = n.id;
  ASSERT_NE(product, pcg::kNoNode);
  for (pcg::PortRef at = plan.node(product).inputs[0]; plan.node(at.node).op != "relu"; at = plan.node(at.node).inputs[0])
    chain.insert(at.node);
  EXPECT_EQ(chain.size(), path->steps.size());
  const pcg::ParallelShape crossed = library().infer(path->steps[0].op, path->steps[0].attrs, {model.shape_of(activation)}).at(0);
  EXPECT_GT(crossed.D[1], 1) << "the value crosses whole";
  const double crossing = reshard_seconds(model.shape_of(activation), devices_from(0, 1), crossed, path->steps[0].view, m);
  const double span = forward_communication_span(build_task_graph(plan, cost), chain);
  EXPECT_LE(span, path->seconds * (1 + 1e-9));
  EXPECT_GE(span, crossing);
  EXPECT_LT(crossing, path->seconds) << "the chain should gather after crossing";
}

TEST(PortLoads, TheMachineFileGivesThePortCount) {
  nlohmann::json j = machine_to_json(two_summit_nodes(3));
  EXPECT_EQ(j.at("network_ports_per_node"), 3);
  EXPECT_EQ(machine_from_json(j).network_ports_per_node, 3);
  j.erase("network_ports_per_node");
  EXPECT_EQ(machine_from_json(j).network_ports_per_node, 1);
  j["network_ports_per_node"] = 0;
  try {
    machine_from_json(j);
    FAIL() << "a port count of 0 was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("network_ports_per_node"), std::string::npos) << e.what();
  }
  EXPECT_EQ(load_machine("dgx_h100").network_ports_per_node, 8);
}

}  // namespace
}  // namespace loom::search
