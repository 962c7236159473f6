#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "loom/interpreter/library.hpp"
#include "loom/search/reshard.hpp"
#include "loom/search/task_graph.hpp"

// What the task graph moves between devices for data loading, weight shards and graph outputs,
// checked against the traffic Unity's figure 1 counts for its MLP (in floats, 4 bytes each).
namespace loom::search {
namespace {

const spec::Library& library() {
  static spec::Library lib = spec::Library::load(spec::Library::paths_or_bundled({}));
  return lib;
}

const pcg::MachineView kBoth{{0, 1}};
const pcg::MachineView kFirst{{0}};

TaskGraph task_graph(const pcg::Graph& g) {
  const Machine m = load_machine("summit").with_nodes(1).with_devices_per_node(2);
  return build_task_graph(g, CostModel(library(), m));
}

// The tasks `task` waits for, joins replaced by what they wait for.
std::set<int> waits_for(const TaskGraph& tg, const SimTask& task) {
  std::set<int> out, seen;
  std::vector<int> open = task.deps;
  while (!open.empty()) {
    const int d = open.back();
    open.pop_back();
    if (!seen.insert(d).second) continue;
    const SimTask& t = tg.tasks[static_cast<std::size_t>(d)];
    if (t.kind == TaskKind::Join)
      open.insert(open.end(), t.deps.begin(), t.deps.end());
    else
      out.insert(d);
  }
  return out;
}

double bytes_of(const TaskGraph& tg, bool backward) {
  double bytes = 0;
  for (const SimTask& t : tg.tasks)
    if (t.kind == TaskKind::Communication && t.backward == backward) bytes += t.bytes;
  return bytes;
}

// The tasks of a node other than the loss the run takes of it.
int tasks_of(const TaskGraph& tg, int node) {
  int count = 0;
  for (const SimTask& t : tg.tasks) count += t.node == node && t.label.rfind("loss on", 0) != 0 ? 1 : 0;
  return count;
}

int add(pcg::Graph& g, std::string op, pcg::AttrMap attrs, std::vector<pcg::PortRef> inputs, const pcg::MachineView& view) {
  const int n = g.add_node(library(), std::move(op), std::move(attrs), std::move(inputs));
  g.set_view(n, view);
  return n;
}

struct Mlp {
  pcg::Graph g;
  int x = 0, w1 = 0, w2 = 0;
};

// Unity's figure 1: relu(x w1) w2 with b = 64, ci = 784, h = 512, co = 10.
Mlp mlp_inputs() {
  Mlp m;
  m.x = m.g.add_input("x", pcg::ParallelShape::unpartitioned({64, 784}));
  m.w1 = m.g.add_input("w1", pcg::ParallelShape::unpartitioned({784, 512}), true);
  m.w2 = m.g.add_input("w2", pcg::ParallelShape::unpartitioned({512, 10}), true);
  for (int n : {m.x, m.w1, m.w2}) m.g.set_view(n, kFirst);
  return m;
}

// The figure's data-parallel plan on both devices, its output combined on the first.
struct DataParallelMlp {
  Mlp m;
  int first_layer = 0, out = 0;
};
DataParallelMlp figure1_data_parallel() {
  DataParallelMlp p{mlp_inputs()};
  pcg::Graph& g = p.m.g;
  const int px = add(g, "partition", {{"dim", 0}, {"degree", 2}}, {{p.m.x, 0}}, kBoth);
  const int rw1 = add(g, "replicate", {{"degree", 2}}, {{p.m.w1, 0}}, kBoth);
  p.first_layer = add(g, "matmul_relu", {}, {{px, 0}, {rw1, 0}}, kBoth);
  const int rw2 = add(g, "replicate", {{"degree", 2}}, {{p.m.w2, 0}}, kBoth);
  const int y = add(g, "matmul", {}, {{p.first_layer, 0}, {rw2, 0}}, kBoth);
  p.out = add(g, "combine", {{"dim", 0}, {"degree", 2}}, {{y, 0}}, kFirst);
  g.mark_output({p.out, 0});
  return p;
}

TEST(TaskGraphTraffic, UnityFigure1DataParallelMovesOnlyTheReplicatedWeights) {
  const DataParallelMlp p = figure1_data_parallel();
  const TaskGraph tg = task_graph(p.m.g);
  // Each device keeps its replicas of w1 (784 x 512) and w2 (512 x 10); after the backward pass
  // the two devices allreduce their gradients: each sends the other its whole gradient, the
  // 813,056 floats of figure 1 in all.
  EXPECT_EQ(communication_bytes(tg), 813056.0 * 4);
  EXPECT_EQ(bytes_of(tg, false), 0);
  EXPECT_EQ(tasks_of(tg, p.out), 0);
}

// The gradient of w2 is complete once the second layer has run backward: its allreduce starts
// then, while the first layer still runs backward; w1's waits for the first layer.
TEST(TaskGraphTraffic, EachWeightsGradientIsSummedAsSoonAsTheBackwardPassHasMadeIt) {
  const DataParallelMlp p = figure1_data_parallel();
  const TaskGraph tg = task_graph(p.m.g);
  std::vector<int> first_layer_backward;
  for (std::size_t i = 0; i < tg.tasks.size(); ++i)
    if (tg.tasks[i].kind == TaskKind::Compute && tg.tasks[i].backward && tg.tasks[i].node == p.first_layer)
      first_layer_backward.push_back(static_cast<int>(i));
  ASSERT_EQ(first_layer_backward.size(), 2u);
  const double w1_bytes = 784 * 512 * 4.0, w2_bytes = 512 * 10 * 4.0;
  int w1_ring = 0, w2_ring = 0;
  for (const SimTask& t : tg.tasks) {
    if (t.kind != TaskKind::Communication) continue;
    // A task's dependencies, followed back through the gradient packing tasks before it.
    std::set<int> before;
    const std::set<int> direct = waits_for(tg, t);
    std::vector<int> open(direct.begin(), direct.end());
    while (!open.empty()) {
      const int d = open.back();
      open.pop_back();
      if (!before.insert(d).second) continue;
      if (tg.tasks[static_cast<std::size_t>(d)].label.rfind("gradient pack", 0) == 0) {
        const std::set<int> packed = waits_for(tg, tg.tasks[static_cast<std::size_t>(d)]);
        open.insert(open.end(), packed.begin(), packed.end());
      }
    }
    const bool after_first_layer =
        std::any_of(first_layer_backward.begin(), first_layer_backward.end(), [&](int b) { return before.count(b) > 0; });
    if (t.bytes == w2_bytes) {
      ++w2_ring;
      EXPECT_FALSE(after_first_layer) << t.label;
    } else {
      ASSERT_EQ(t.bytes, w1_bytes) << t.label;
      ++w1_ring;
      EXPECT_TRUE(after_first_layer) << t.label;
    }
  }
  EXPECT_EQ(w1_ring, 2);
  EXPECT_EQ(w2_ring, 2);
}

// relu(x w + b), data parallel on both devices: x [64, 784] split by rows, w [784, hidden] and
// b [hidden] replicated; w's and b's gradients are complete at the same node.
struct DataParallelLinear {
  pcg::Graph g;
  int w = 0, b = 0;
};
DataParallelLinear data_parallel_linear(std::int64_t hidden) {
  DataParallelLinear p;
  pcg::Graph& g = p.g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({64, 784}));
  p.w = g.add_input("w", pcg::ParallelShape::unpartitioned({784, hidden}), true);
  p.b = g.add_input("b", pcg::ParallelShape::unpartitioned({hidden}), true);
  for (int n : {x, p.w, p.b}) g.set_view(n, kFirst);
  const int px = add(g, "partition", {{"dim", 0}, {"degree", 2}}, {{x, 0}}, kBoth);
  const int rw = add(g, "replicate", {{"degree", 2}}, {{p.w, 0}}, kBoth);
  const int rb = add(g, "replicate", {{"degree", 2}}, {{p.b, 0}}, kBoth);
  const int y = add(g, "linear", {}, {{px, 0}, {rw, 0}, {rb, 0}}, kBoth);
  const int h = add(g, "relu", {}, {{y, 0}}, kBoth);
  g.mark_output({add(g, "combine", {{"dim", 0}, {"degree", 2}}, {{h, 0}}, kFirst), 0});
  return p;
}

// The gradient sums as the runtime runs them: small boxes complete at one node packed into one
// ring (a packing task on each device first), a large whole gradient in a ring of its own with
// nothing packed.
TEST(TaskGraphTraffic, LargeWholeGradientsAreSummedInPlaceAndSmallOnesPacked) {
  const auto rings_and_packs = [](const TaskGraph& tg) {
    std::map<double, int> ring_tasks;  // by bytes
    std::map<double, int> packed;      // ring tasks after a packing task, by bytes
    for (const SimTask& t : tg.tasks) {
      if (t.kind != TaskKind::Communication) continue;
      ++ring_tasks[t.bytes];
      for (int d : waits_for(tg, t))
        if (tg.tasks[static_cast<std::size_t>(d)].label.rfind("gradient pack", 0) == 0) {
          ++packed[t.bytes];
          break;
        }
    }
    int packs = 0;
    for (const SimTask& t : tg.tasks) packs += t.label.rfind("gradient pack", 0) == 0 ? 1 : 0;
    return std::tuple{ring_tasks, packed, packs};
  };
  // Large: w (784 x 64) alone, b (64) packed.
  ASSERT_GE(784 * 64, pcg::kGradientSumInPlaceElements);
  {
    const auto [rings, packed, packs] = rings_and_packs(task_graph(data_parallel_linear(64).g));
    EXPECT_EQ(rings, (std::map<double, int>{{64 * 4.0, 2}, {784 * 64 * 4.0, 2}}));
    EXPECT_EQ(packed, (std::map<double, int>{{64 * 4.0, 2}}));
    EXPECT_EQ(packs, 2);
  }
  // Small: w (784 x 4) and b (4) packed together.
  ASSERT_LT(784 * 4, pcg::kGradientSumInPlaceElements);
  {
    const auto [rings, packed, packs] = rings_and_packs(task_graph(data_parallel_linear(4).g));
    EXPECT_EQ(rings, (std::map<double, int>{{(784 * 4 + 4) * 4.0, 2}}));
    EXPECT_EQ(packed, (std::map<double, int>{{(784 * 4 + 4) * 4.0, 2}}));
    EXPECT_EQ(packs, 2);
  }
}

TEST(TaskGraphTraffic, UnityFigure2bJointPlanMovesOnlyTheHiddenActivations) {
  Mlp m = mlp_inputs();
  pcg::Graph& g = m.g;
  const int px = add(g, "partition", {{"dim", 1}, {"degree", 2}}, {{m.x, 0}}, kBoth);
  const int pw1 = add(g, "partition", {{"dim", 0}, {"degree", 2}}, {{m.w1, 0}}, kBoth);
  const int partial = add(g, "matmul", {}, {{px, 0}, {pw1, 0}}, kBoth);
  ASSERT_EQ(g.shape_of({partial, 0}).V, 2);
  const int summed = add(g, "reduce", {{"degree", 2}}, {{partial, 0}}, kFirst);
  const int h = add(g, "relu", {}, {{summed, 0}}, kFirst);
  const int rh = add(g, "replicate", {{"degree", 2}}, {{h, 0}}, kBoth);
  const int pw2 = add(g, "partition", {{"dim", 1}, {"degree", 2}}, {{m.w2, 0}}, kBoth);
  const int y = add(g, "matmul", {}, {{rh, 0}, {pw2, 0}}, kBoth);
  const int out = add(g, "combine", {{"dim", 1}, {"degree", 2}}, {{y, 0}}, kFirst);
  g.mark_output({out, 0});
  const TaskGraph tg = task_graph(g);
  // Device 1's partial sum (64 x 512) to device 0 and the activations back, each way forward and
  // backward.
  EXPECT_EQ(communication_bytes(tg), 131072.0 * 4);
  for (const SimTask& t : tg.tasks) {
    if (t.kind != TaskKind::Communication) continue;
    EXPECT_TRUE(t.node == summed || t.node == rh) << t.label;
    EXPECT_EQ(t.bytes, 64 * 512 * 4.0) << t.label;
  }
}

// w (8 x 8) split or copied over both devices, read by a relu on each.
pcg::Graph weight_over_both(const std::string& parallel_op) {
  pcg::Graph g;
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({8, 8}), true);
  const pcg::AttrMap attrs = parallel_op == "partition" ? pcg::AttrMap{{"dim", 0}, {"degree", 2}} : pcg::AttrMap{{"degree", 2}};
  const int spread = add(g, parallel_op, attrs, {{w, 0}}, kBoth);
  g.mark_output({add(g, "relu", {}, {{spread, 0}}, kBoth), 0});
  return g;
}

// The executor steps through a layout change as through an operator: each device holding its
// pieces pays the machine's dispatch overhead forward, and backward where a gradient runs through
// it, before the change's readers run; a machine without a dispatch overhead gets no such task.
TEST(TaskGraphTraffic, EachDeviceHoldingALayoutChangesPiecesPaysItsDispatch) {
  const DataParallelMlp p = figure1_data_parallel();
  Machine m = load_machine("summit").with_nodes(1).with_devices_per_node(2);
  ASSERT_EQ(m.device.dispatch_overhead, 0);
  const auto dispatches = [](const TaskGraph& tg) {
    std::vector<const SimTask*> out;
    for (const SimTask& t : tg.tasks)
      if (t.label.find(" dispatch on ") != std::string::npos) out.push_back(&t);
    return out;
  };
  EXPECT_TRUE(dispatches(build_task_graph(p.m.g, CostModel(library(), m))).empty());

  m.device.dispatch_overhead = 3e-6;
  const TaskGraph tg = build_task_graph(p.m.g, CostModel(library(), m));
  std::map<std::pair<int, int>, const SimTask*> by_node_and_device;  // forward dispatches
  for (const SimTask* t : dispatches(tg)) {
    if (t->backward) continue;
    EXPECT_TRUE(by_node_and_device.emplace(std::make_pair(t->node.value(), t->device), t).second) << t->label;
    EXPECT_EQ(t->seconds, 3e-6);
    const std::string op = p.m.g.node(t->node).op;
    // x is data: no gradient runs back through its partition; the weights' replicas take one.
    EXPECT_EQ(t->backward_seconds, op == "replicate" ? 3e-6 : 0) << t->label;
  }
  // The partition of x and the two replicas, each on both devices; the combine gives the graph
  // output, which the loss reads where its pieces are.
  EXPECT_EQ(by_node_and_device.size(), 6u);
  // The partition's dispatch on a device follows its copy of x's piece there.
  for (const auto& [node_and_device, dispatch] : by_node_and_device) {
    if (p.m.g.node(dispatch->node).op != "partition") continue;
    int copies = 0;
    for (int d : waits_for(tg, *dispatch)) {
      const SimTask& dep = tg.tasks[static_cast<std::size_t>(d)];
      copies += dep.label.find("piece copy") != std::string::npos && dep.node == dispatch->node && dep.device == dispatch->device;
    }
    EXPECT_EQ(copies, 1) << dispatch->label;
  }
  for (const SimTask& t : tg.tasks) {
    if (t.node != p.first_layer || t.backward || t.kind != TaskKind::Compute) continue;
    const std::set<int> before = waits_for(tg, t);
    int dispatched = 0;
    for (int d : before) {
      const SimTask& dep = tg.tasks[static_cast<std::size_t>(d)];
      if (dep.label.find(" dispatch on ") == std::string::npos) continue;
      EXPECT_EQ(dep.device, t.device) << dep.label;
      ++dispatched;
    }
    EXPECT_EQ(dispatched, 2) << t.label << ": after the partition's and the replica's dispatch on its device";
  }
  // Each dispatch is mirrored in the backward pass: the replicas' cost it again, after the
  // backward of the layer reading them on the same device, and each weight's gradient sum waits
  // for it; the partition's costs nothing.
  std::vector<int> replica_backward;
  double backward = 0;
  for (std::size_t i = 0; i < tg.tasks.size(); ++i) {
    const SimTask& t = tg.tasks[i];
    if (!t.backward || t.label.find(" dispatch on ") == std::string::npos) continue;
    backward += t.seconds;
    if (p.m.g.node(t.node).op != "replicate") continue;
    replica_backward.push_back(static_cast<int>(i));
    const pcg::NodeId reader =
        t.node == p.m.g.node(p.first_layer).inputs[1].node ? pcg::NodeId(p.first_layer) : pcg::NodeId(p.first_layer + 2);
    int after_reader = 0;
    for (int d : waits_for(tg, t)) {
      const SimTask& dep = tg.tasks[static_cast<std::size_t>(d)];
      after_reader += dep.node == reader && dep.backward && dep.kind == TaskKind::Compute && dep.device == t.device;
    }
    EXPECT_EQ(after_reader, 1) << t.label;
  }
  EXPECT_DOUBLE_EQ(backward, 4 * 3e-6);
  ASSERT_EQ(replica_backward.size(), 4u);
  std::set<int> before_sums;
  for (const SimTask& t : tg.tasks) {
    if (t.kind != TaskKind::Communication || !t.backward) continue;
    for (int d : waits_for(tg, t)) {
      before_sums.insert(d);
      if (tg.tasks[static_cast<std::size_t>(d)].label.rfind("gradient pack", 0) == 0)
        for (int packed : waits_for(tg, tg.tasks[static_cast<std::size_t>(d)])) before_sums.insert(packed);
    }
  }
  for (int r : replica_backward) EXPECT_EQ(before_sums.count(r), 1u) << tg.tasks[static_cast<std::size_t>(r)].label;
}

TEST(TaskGraphTraffic, PartitionedWeightShardsLiveOnTheirDevices) {
  const TaskGraph tg = task_graph(weight_over_both("partition"));
  EXPECT_EQ(communication_bytes(tg), 0);
  // Each device copies its 32 elements out of the whole weight (read and written), and backward
  // adds their gradient into a whole gradient it zeroes: five passes over its piece, one over w.
  const Machine m = load_machine("summit").with_nodes(1).with_devices_per_node(2);
  const double bandwidth = m.device.memory_bandwidth;
  std::vector<std::size_t> copies, copy_gradients;
  for (std::size_t i = 0; i < tg.tasks.size(); ++i) {
    const SimTask& t = tg.tasks[i];
    if (t.label.find("piece copy") == std::string::npos) continue;
    (t.backward ? copy_gradients : copies).push_back(i);
    EXPECT_DOUBLE_EQ(t.seconds, t.backward ? (5 * 32 + 64) * 4.0 / bandwidth : 2 * 32 * 4.0 / bandwidth) << t.label;
  }
  ASSERT_EQ(copies.size(), 2u);
  ASSERT_EQ(copy_gradients.size(), 2u);
  // Each device updates its own 32 elements once its piece's gradient is in place.
  int updates = 0;
  for (const SimTask& t : tg.tasks) {
    if (t.label.rfind("weight update", 0) != 0) continue;
    ++updates;
    EXPECT_DOUBLE_EQ(t.seconds, 32 * 3 * 4.0 / bandwidth + m.device.kernel_overhead);
    ASSERT_FALSE(t.deps.empty());
    for (int d : t.deps) EXPECT_EQ(tg.tasks[static_cast<std::size_t>(d)].device, t.device);
    EXPECT_TRUE(std::any_of(t.deps.begin(), t.deps.end(), [&](int d) {
      return std::find(copy_gradients.begin(), copy_gradients.end(), static_cast<std::size_t>(d)) != copy_gradients.end();
    })) << t.label;
  }
  EXPECT_EQ(updates, 2);
  // Each relu task waits only for its own device's copy, never for a transfer.
  for (const SimTask& t : tg.tasks) {
    if (t.backward || t.label.rfind("relu", 0) != 0) continue;
    ASSERT_EQ(t.deps.size(), 1u) << t.label;
    EXPECT_EQ(tg.tasks[static_cast<std::size_t>(t.deps[0])].device, t.device);
    EXPECT_NE(tg.tasks[static_cast<std::size_t>(t.deps[0])].label.find("piece copy"), std::string::npos);
  }
}

TEST(TaskGraphTraffic, WholeReplicasOfAnInputAreReadInPlace) {
  for (const SimTask& t : task_graph(weight_over_both("replicate")).tasks)
    EXPECT_EQ(t.label.find("piece copy"), std::string::npos) << t.label;
}

TEST(TaskGraphTraffic, ReplicatedWeightGradientsAreAllreducedThenEachReplicaUpdated) {
  const TaskGraph tg = task_graph(weight_over_both("replicate"));
  EXPECT_EQ(communication_bytes(tg), 2 * 64 * 4.0);
  std::vector<int> ring, relu_backward;
  for (std::size_t i = 0; i < tg.tasks.size(); ++i) {
    const SimTask& t = tg.tasks[i];
    if (t.kind == TaskKind::Compute && t.backward && t.label.rfind("relu", 0) == 0) relu_backward.push_back(static_cast<int>(i));
    if (t.kind != TaskKind::Communication) continue;
    // A ring of two: each device sends the other its whole gradient of w, after both gradients
    // are computed.
    EXPECT_TRUE(t.backward) << t.label;
    EXPECT_EQ(t.bytes, 64 * 4.0);
    EXPECT_EQ(t.peer, 1 - t.device) << t.label;
    ring.push_back(static_cast<int>(i));
  }
  ASSERT_EQ(ring.size(), 2u);
  ASSERT_EQ(relu_backward.size(), 2u);
  for (int r : ring) {
    // What the ring step waits for, through the packing tasks before it.
    std::set<int> before = waits_for(tg, tg.tasks[static_cast<std::size_t>(r)]);
    for (int d : std::set<int>(before))
      if (tg.tasks[static_cast<std::size_t>(d)].label.rfind("gradient pack", 0) == 0) {
        const std::set<int> packed = waits_for(tg, tg.tasks[static_cast<std::size_t>(d)]);
        before.insert(packed.begin(), packed.end());
      }
    for (int b : relu_backward) EXPECT_EQ(before.count(b), 1u);
  }
  int updates = 0;
  for (const SimTask& t : tg.tasks) {
    if (t.label.rfind("weight update", 0) != 0) continue;
    ++updates;
    EXPECT_EQ(waits_for(tg, t), std::set<int>(ring.begin(), ring.end())) << "after both ring transfers";
    EXPECT_GT(t.seconds, 0);
  }
  EXPECT_EQ(updates, 2);
}

TEST(TaskGraphTraffic, EachDeviceIsChargedTheMeasuredUpdateOfTheBoxItHolds) {
  const pcg::Graph g = weight_over_both("partition");
  const Machine m = load_machine("summit").with_nodes(1).with_devices_per_node(2);
  // w [8, 8] split in two along its first dimension: each device updates a [4, 8] box of it.
  const auto boxes = weight_update_boxes(g, CostModel(library(), m));
  ASSERT_EQ(boxes.size(), 1u);
  ASSERT_EQ(boxes.begin()->second.size(), 2u);
  for (const auto& [device, held] : boxes.begin()->second) {
    ASSERT_EQ(held.size(), 1u);
    EXPECT_EQ(held.front().extent(), (std::vector<std::int64_t>{4, 8})) << device;
    EXPECT_EQ(held.front().lo[0], 4 * device) << device;
  }
  ProfileDatabase db;
  db.record(weight_update_key("sgd", {4, 8}, {8, 8}, m.device.kind), 7e-6);
  const TaskGraph tg = build_task_graph(g, CostModel(library(), m, &db));
  int updates = 0;
  for (const SimTask& t : tg.tasks) {
    if (t.label.rfind("weight update", 0) != 0) continue;
    ++updates;
    EXPECT_DOUBLE_EQ(t.seconds, 7e-6) << "the measured figure takes the place of the bytes and the launch";
  }
  EXPECT_EQ(updates, 2);
  // Replicated, each device updates all of w: the figure for the [4, 8] box does not apply.
  const TaskGraph replicated = build_task_graph(weight_over_both("replicate"), CostModel(library(), m, &db));
  for (const SimTask& t : replicated.tasks) {
    if (t.label.rfind("weight update", 0) != 0) continue;
    EXPECT_DOUBLE_EQ(t.seconds, 64 * 3 * 4.0 / m.device.memory_bandwidth + m.device.kernel_overhead);
  }
}

TEST(TaskGraphTraffic, EachDeviceLoadsItsPieceOfTheData) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 8}));
  const int px = add(g, "partition", {{"dim", 0}, {"degree", 2}}, {{x, 0}}, kBoth);
  const int r = add(g, "relu", {}, {{px, 0}}, kBoth);
  g.mark_output({r, 0});
  EXPECT_EQ(communication_bytes(task_graph(g)), 0);

  // Splitting an activation held on device 0 still sends device 1 its half.
  pcg::Graph h;
  const int y = h.add_input("y", pcg::ParallelShape::unpartitioned({8, 8}));
  const int a = add(h, "relu", {}, {{y, 0}}, kFirst);
  const int pa = add(h, "partition", {{"dim", 0}, {"degree", 2}}, {{a, 0}}, kBoth);
  h.mark_output({add(h, "relu", {}, {{pa, 0}}, kBoth), 0});
  EXPECT_EQ(communication_bytes(task_graph(h)), 2 * 32 * 4.0);
}

// An operator that reads a graph input on other devices than the input's, with no layout change
// between them, loads it there from the data, as a training run's process reads it from its feed:
// nothing is sent. A weight read so is summed among the devices that read it.
TEST(TaskGraphTraffic, AGraphInputReadOnOtherDevicesIsLoadedThere) {
  const pcg::MachineView second{{1}};
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 8}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({8, 8}), true);
  for (int n : {x, w}) g.set_view(n, kFirst);
  const int a = add(g, "matmul", {}, {{x, 0}, {w, 0}}, kFirst);
  const int b = add(g, "matmul", {}, {{x, 0}, {w, 0}}, second);
  g.mark_output({add(g, "ewadd", {}, {{a, 0}, {b, 0}}, kFirst), 0});
  const TaskGraph tg = task_graph(g);
  double forward_from_inputs = 0, summed = 0;
  for (const SimTask& t : tg.tasks) {
    if (t.kind != TaskKind::Communication) continue;
    if (!t.backward && t.node == b) forward_from_inputs += t.bytes;
    if (t.label.find("allreduce") != std::string::npos) summed += t.bytes;
  }
  EXPECT_EQ(forward_from_inputs, 0);
  EXPECT_GT(summed, 0) << "the weight's two readers should sum its gradient";
}

TEST(TaskGraphTraffic, OnlyAnUnreadGraphOutputIsLeftWhereItsPiecesAre) {
  // y split over both devices, combined on device 0.
  auto split_then_combined = [](pcg::Graph& g) {
    const int y = g.add_input("y", pcg::ParallelShape::unpartitioned({8, 8}));
    const int py = add(g, "partition", {{"dim", 0}, {"degree", 2}}, {{y, 0}}, kBoth);
    const int r = add(g, "relu", {}, {{py, 0}}, kBoth);
    return add(g, "combine", {{"dim", 0}, {"degree", 2}}, {{r, 0}}, kFirst);
  };
  pcg::Graph g;
  const int out = split_then_combined(g);
  g.mark_output({out, 0});
  const TaskGraph tg = task_graph(g);
  EXPECT_EQ(communication_bytes(tg), 0);
  EXPECT_EQ(tasks_of(tg, out), 0);

  // The same combine read by another operator gathers device 1's half, and its gradient returns;
  // device 0's own half is copied into the combined piece there, and its gradient back.
  pcg::Graph h;
  const int combined = split_then_combined(h);
  h.mark_output({combined, 0});
  h.mark_output({add(h, "relu", {}, {{combined, 0}}, kFirst), 0});
  const TaskGraph th = task_graph(h);
  EXPECT_EQ(communication_bytes(th), 2 * 32 * 4.0);
  int transfers = 0, copies = 0;
  for (const SimTask& t : th.tasks) {
    if (t.node != combined) continue;
    if (t.kind == TaskKind::Communication)
      ++transfers;
    else if (t.label.find("local copy") != std::string::npos && t.device == 0)
      ++copies;
  }
  EXPECT_EQ(transfers, 2);
  EXPECT_EQ(copies, 2);
}

// A combine on device 0 then a replicate onto both devices is one all-gather, as the runtime runs
// it: each device gets the other's half directly, at once, and the combine costs nothing. Without
// the replicate nothing is fused.
TEST(TaskGraphTraffic, ACombineThenAReplicateIsOneAllGather) {
  pcg::Graph g;
  const int y = g.add_input("y", pcg::ParallelShape::unpartitioned({8, 8}));
  const int py = add(g, "partition", {{"dim", 0}, {"degree", 2}}, {{y, 0}}, kBoth);
  const int r = add(g, "relu", {}, {{py, 0}}, kBoth);
  const int combined = add(g, "combine", {{"dim", 0}, {"degree", 2}}, {{r, 0}}, kFirst);
  const int copies = add(g, "replicate", {{"degree", 2}}, {{combined, 0}}, kBoth);
  g.mark_output({add(g, "relu", {}, {{copies, 0}}, kBoth), 0});
  const TaskGraph tg = task_graph(g);
  EXPECT_EQ(tasks_of(tg, combined), 0);
  std::vector<std::pair<int, int>> forward_links;
  for (const SimTask& t : tg.tasks) {
    if (t.node != copies || t.kind != TaskKind::Communication || t.backward) continue;
    forward_links.push_back({t.device, t.peer});
    EXPECT_EQ(t.bytes, 32 * 4.0) << t.label;
    for (int d : t.deps) EXPECT_EQ(tg.tasks[static_cast<std::size_t>(d)].kind, TaskKind::Compute) << t.label << " waits for a transfer";
  }
  std::sort(forward_links.begin(), forward_links.end());
  EXPECT_EQ(forward_links, (std::vector<std::pair<int, int>>{{0, 1}, {1, 0}}));
  // Only one reading operator besides the replicate: the combine stays on its own.
  g.mark_output({combined, 0});
  EXPECT_GT(tasks_of(task_graph(g), combined), 0);
}

// A layout change whose pieces move as one collective is charged as that collective's ring among
// the devices, the seconds the machine mapping charges for the same move (reshard_seconds).
TEST(TaskGraphTraffic, AnAllreduceIsChargedAsTheRingTheMappingCosts) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({64, 784}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({784, 512}), true);
  for (int n : {x, w}) g.set_view(n, kFirst);
  const int px = add(g, "partition", {{"dim", 1}, {"degree", 2}}, {{x, 0}}, kBoth);
  const int pw = add(g, "partition", {{"dim", 0}, {"degree", 2}}, {{w, 0}}, kBoth);
  const int partial = add(g, "matmul", {}, {{px, 0}, {pw, 0}}, kBoth);
  const int sum = add(g, "allreduce", {{"degree", 2}}, {{partial, 0}}, kBoth);
  g.mark_output({add(g, "relu", {}, {{sum, 0}}, kBoth), 0});

  const Machine m = load_machine("summit").with_nodes(1).with_devices_per_node(2);
  const TaskGraph tg = build_task_graph(g, CostModel(library(), m));
  const double expected = reshard_seconds(g.shape_of({partial, 0}), kBoth, g.shape_of({sum, 0}), kBoth, m);
  const double bytes = 64 * 512 * 4;
  int ring = 0;
  for (const SimTask& t : tg.tasks) {
    if (t.node != sum || t.kind != TaskKind::Communication || t.backward) continue;
    ++ring;
    EXPECT_DOUBLE_EQ(t.seconds, expected);
    EXPECT_DOUBLE_EQ(t.bytes, bytes);  // 2 (k - 1) / k of the buffer
    EXPECT_NE(t.label.find("allreduce"), std::string::npos) << t.label;
  }
  EXPECT_EQ(ring, 2);
  EXPECT_DOUBLE_EQ(expected, m.link_between(0, 1).ring_allreduce_seconds(bytes, 2));
}

}  // namespace
}  // namespace loom::search
