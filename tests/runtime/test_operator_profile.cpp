// Kernel times of a run become profile entries under the keys the cost model looks up.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/operator_profile.hpp"
#include "loom/search/gradient_flow.hpp"
#include "loom/search/task_graph.hpp"
#include "sharded_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

constexpr int kDevices = 2;

const search::Machine& host() {
  static const search::Machine m = search::load_machine("cpu_host").with_devices_per_node(kDevices);
  return m;
}

// The figure-1 MLP, data parallel over two devices.
const pcg::Graph& plan() {
  static const pcg::Graph p = [] {
    const pcg::Graph g = small_mlp();
    return search::materialize(g, search::data_parallel(library(), g, host()), library());
  }();
  return p;
}

std::vector<pcg::ParallelShape> input_shapes(const pcg::Graph& g, const pcg::Node& n) {
  std::vector<pcg::ParallelShape> out;
  for (pcg::PortRef in : n.inputs) out.push_back(g.shape_of(in));
  return out;
}

// The key the cost model looks the plan's node `n` up by.
search::ProfileKey key_of(const pcg::Node& n, const std::string& device) {
  return search::task_key(n.op, n.attrs, input_shapes(plan(), n), search::inputs_taking_gradients(plan(), n), device);
}

// max(FLOPs / peak, bytes / bandwidth) + overheads, from the spec's task cost.
double roofline(const pcg::Graph& g, const pcg::Node& n) {
  const pcg::TaskCost c = library().task_cost(n.op, n.attrs, input_shapes(g, n));
  const search::DeviceSpec& d = host().device;
  // The host's devices share its node: each kernel slower than alone.
  const double busy = host().devices_per_node() > 1 ? d.busy_node_slowdown : 1;
  return busy * (std::max(c.flops / d.peak_flops, (c.bytes_read + c.bytes_written) / d.memory_bandwidth) / d.achieved(c.shape) +
                 d.kernel_overhead) +
         d.dispatch_overhead;
}

bool is_layout_change(const pcg::Node& n) { return !n.is_graph_input() && !search::is_compute_node(library(), n); }

// A made-up time per task for every operator node over two runs of each task: forward (id + 1)
// ms; backward 1.5 times that, for the even nodes only.
std::vector<OperatorTime> made_up_times(const pcg::Graph& g) {
  std::vector<OperatorTime> times(g.size());
  for (const pcg::Node& n : g.nodes()) {
    if (!search::is_compute_node(library(), n)) continue;
    auto& t = times[n.id.index()];
    t.forward_tasks = 2 * n.tasks();
    t.forward_seconds = static_cast<double>(t.forward_tasks) * (n.id + 1) * 1e-3;
    if (n.id % 2 == 0) {
      t.backward_tasks = t.forward_tasks;
      t.backward_seconds = 1.5 * t.forward_seconds;
    }
  }
  return times;
}

TEST(OperatorProfile, CoversEveryOperatorAndLayoutChangeTheProcessRan) {
  LocalTransport local;
  ShardedExecutor<double> executor(library(), plan(), builtin_kernels(), local, weights_of(small_mlp()), kDevices);
  const NamedTensors<double> feeds = models::random_values(library(), small_mlp(), 3);
  executor.forward(feeds);
  executor.forward(feeds);
  const std::vector<OperatorProfile> profiles = operator_profiles(library(), plan(), host(), executor.operator_times());

  std::vector<int> nodes;
  std::size_t layout_changes = 0, unread_outputs = 0;
  for (const pcg::Node& n : plan().nodes()) {
    if (n.is_graph_input()) continue;
    // The layout change that gathers the output nobody reads is not run: the loss reads the
    // output's pieces where they are.
    if (!search::is_compute_node(library(), n) && plan().consumers(n.id).empty()) {
      ++unread_outputs;
      continue;
    }
    nodes.push_back(n.id);
    layout_changes += search::is_compute_node(library(), n) ? 0 : 1;
  }
  EXPECT_GT(layout_changes, 0u);  // the plan splits the batch and replicates the weights
  EXPECT_EQ(unread_outputs, 1u);  // and gathers the output
  ASSERT_EQ(profiles.size(), nodes.size());
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    const OperatorProfile& p = profiles[i];
    const pcg::Node& n = plan().node(p.node);
    SCOPED_TRACE(n.describe());
    EXPECT_EQ(p.node, nodes[i]);
    EXPECT_EQ(p.op, n.op);
    EXPECT_EQ(p.tasks, 2 * n.tasks());  // one process holds both devices' pieces, twice
    const OperatorTime& t = executor.operator_times()[p.node.index()];
    EXPECT_DOUBLE_EQ(p.measured_seconds, t.forward_seconds / static_cast<double>(t.forward_tasks));
    if (search::is_compute_node(library(), n)) {
      EXPECT_EQ(p.key.to_string(), (key_of(n, "cpu").to_string()));
      ASSERT_TRUE(p.simulated_seconds);
      EXPECT_DOUBLE_EQ(*p.simulated_seconds, roofline(plan(), n));
    } else {
      const bool loaded = plan().node(n.inputs[0].node).is_graph_input();
      EXPECT_EQ(
          p.key.to_string(),
          search::layout_change_key(plan().shape_of(n.inputs[0]), n.output_shapes[0], loaded, t.backward_tasks > 0, "cpu").to_string());
      // Keyed by where its source comes from and whether a gradient runs back through it.
      EXPECT_NE(p.key.to_string().find(loaded ? "loaded=1" : "loaded=0"), std::string::npos) << p.key.to_string();
      EXPECT_FALSE(p.simulated_seconds);
    }
  }
}

TEST(OperatorProfile, ARecordedDatabaseReplacesTheRooflineInThePlansCost) {
  search::ProfileDatabase db;
  record_profiles(operator_profiles(library(), plan(), host(), made_up_times(plan())), db);
  const search::CostModel measured(library(), host(), &db);
  const search::CostModel estimated(library(), host());
  std::size_t compute_nodes = 0;
  for (const pcg::Node& n : plan().nodes()) {
    if (!search::is_compute_node(library(), n)) continue;
    ++compute_nodes;
    SCOPED_TRACE(n.describe());
    const search::TaskEstimate est = measured.compute(plan(), n);
    EXPECT_TRUE(est.measured);
    // The runtime's dispatch outside the kernel comes on top of the kernel's time.
    EXPECT_DOUBLE_EQ(est.seconds, (n.id + 1) * 1e-3 + host().device.dispatch_overhead);
    EXPECT_FALSE(estimated.compute(plan(), n).measured);
    const search::ProfileEntry* e = db.find(key_of(n, host().device.kind));
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->samples, 2 * n.tasks());
    ASSERT_TRUE(e->simulated_seconds);
    EXPECT_DOUBLE_EQ(*e->simulated_seconds, roofline(plan(), n));
  }
  EXPECT_EQ(db.size(), compute_nodes);  // the data-parallel MLP's operators have distinct keys

  // Every compute task of the simulated iteration takes the measured figure; backward its own
  // where one was measured, twice the forward where not.
  const search::TaskGraph tasks = search::build_task_graph(plan(), measured);
  std::size_t checked = 0;
  for (const search::SimTask& t : tasks.tasks) {
    if (t.kind != search::TaskKind::Compute || !search::is_compute_node(library(), plan().node(t.node))) continue;
    const double forward = (t.node + 1) * 1e-3;
    const double kernel = !t.backward ? forward : t.node % 2 == 0 ? 1.5 * forward : 2 * forward;
    EXPECT_DOUBLE_EQ(t.seconds, kernel + host().device.dispatch_overhead) << t.label;
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

TEST(OperatorProfile, RecordingAgainAveragesOverTaskRuns) {
  search::ProfileDatabase db;
  std::vector<OperatorTime> times = made_up_times(plan());
  record_profiles(operator_profiles(library(), plan(), host(), times), db);
  for (OperatorTime& t : times) t.forward_seconds *= 3;
  record_profiles(operator_profiles(library(), plan(), host(), times), db);
  for (const pcg::Node& n : plan().nodes()) {
    if (!search::is_compute_node(library(), n)) continue;
    EXPECT_DOUBLE_EQ(*db.seconds(key_of(n, "cpu")), 2 * (n.id + 1) * 1e-3) << n.describe();
  }
}

TEST(OperatorProfile, LeavesOutNodesThatRanNothingHere) {
  std::vector<OperatorTime> times(plan().size());
  int only = -1;
  for (const pcg::Node& n : plan().nodes())
    if (only < 0 && search::is_compute_node(library(), n)) only = n.id;
  ASSERT_GE(only, 0);
  times[static_cast<std::size_t>(only)] = OperatorTime{4e-3, 0, 2, 0};
  // Backward runs alone (as on a process holding no piece of the forward) are left out too.
  for (const pcg::Node& n : plan().nodes())
    if (!n.is_graph_input() && n.id != only) times[n.id.index()] = OperatorTime{0, 1e-3, 0, 1};
  const std::vector<OperatorProfile> profiles = operator_profiles(library(), plan(), host(), times);
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].node, only);
  EXPECT_DOUBLE_EQ(profiles[0].measured_seconds, 2e-3);
}

// A layout change's measured work per piece replaces the bytes the task graph would charge for
// it: every task of the change on a device takes the measured figure, forward and backward.
TEST(OperatorProfile, ARecordedLayoutChangeReplacesItsBytesInTheTaskGraph) {
  const search::CostModel estimated(library(), host());
  const search::TaskGraph before = search::build_task_graph(plan(), estimated);
  // The layout changes of the plan that the task graph charges work for on the devices (besides
  // the executor's dispatch, which is no part of a change's measured work).
  const auto work_of_a_change = [](const search::SimTask& t) {
    return t.kind == search::TaskKind::Compute && is_layout_change(plan().node(t.node)) && t.label.find("loss") == std::string::npos &&
           t.label.find(" dispatch on ") == std::string::npos;
  };
  std::set<int> charged;
  for (const search::SimTask& t : before.tasks)
    if (work_of_a_change(t)) charged.insert(t.node);
  std::vector<OperatorTime> times(plan().size());
  // As a run records them: no gradient runs back through a split of the data.
  for (const pcg::Node& n : plan().nodes())
    if (is_layout_change(n)) {
      const bool of_data = plan().node(n.inputs[0].node).op == pcg::kInputOp;
      times[n.id.index()] = of_data ? OperatorTime{n.tasks() * (n.id + 1) * 1e-4, 0, n.tasks(), 0}
                                    : OperatorTime{n.tasks() * (n.id + 1) * 1e-4, n.tasks() * (n.id + 1) * 3e-4, n.tasks(), n.tasks()};
    }
  search::ProfileDatabase db;
  record_profiles(operator_profiles(library(), plan(), host(), times), db);
  const search::CostModel measured(library(), host(), &db);
  const search::TaskGraph after = search::build_task_graph(plan(), measured);

  std::map<int, int> tasks_after;  // per layout change
  for (const search::SimTask& t : after.tasks) {
    const pcg::Node& n = plan().node(t.node);
    if (!work_of_a_change(t)) continue;
    SCOPED_TRACE(t.label);
    // A split of the data has no backward: nothing takes the data's gradient.
    const bool of_data = plan().node(n.inputs[0].node).op == pcg::kInputOp;
    EXPECT_DOUBLE_EQ(t.seconds, (!t.backward ? 1e-4 : of_data ? 0 : 3e-4) * (n.id + 1));
    ++tasks_after[t.node];
  }
  // Every change the estimate charged is charged the measured figure, for each piece, both ways;
  // a change measured where the estimate saw no work (the weights' replicas) is charged too.
  for (int id : charged) EXPECT_EQ(tasks_after[id], 2 * plan().node(id).tasks()) << plan().node(id).describe();
  EXPECT_GT(tasks_after.size(), charged.size());
  // What the measurement cannot change: the communication.
  EXPECT_DOUBLE_EQ(search::communication_bytes(after), search::communication_bytes(before));
}

// Made-up updates of every weight of `g`: four, (id + 1) microseconds each.
std::vector<OperatorTime> made_up_updates(const pcg::Graph& g) {
  std::vector<OperatorTime> times(g.size());
  for (const pcg::Node& n : g.nodes())
    if (n.op == pcg::kWeightOp) {
      times[n.id.index()].updates = 4;
      times[n.id.index()].update_seconds = 4 * (n.id + 1) * 1e-6;
    }
  return times;
}

TEST(OperatorProfile, OneProcessUpdatesWholeWeights) {
  const std::vector<OperatorProfile> profiles = operator_profiles(library(), plan(), host(), made_up_updates(plan()), "adam", 1);
  std::size_t weights = 0;
  for (const pcg::Node& n : plan().nodes()) weights += n.op == pcg::kWeightOp ? 1 : 0;
  ASSERT_EQ(profiles.size(), weights);
  for (const OperatorProfile& p : profiles) {
    const std::vector<std::int64_t>& dims = plan().node(p.node).output_shapes[0].dims;
    SCOPED_TRACE(plan().node(p.node).describe());
    EXPECT_EQ(p.op, "adam_update");
    EXPECT_EQ(p.key.to_string(), search::weight_update_key("adam", dims, dims, "cpu").to_string());
    EXPECT_DOUBLE_EQ(p.measured_seconds, (p.node + 1) * 1e-6);
    EXPECT_EQ(p.tasks, 4);
    EXPECT_EQ(p.backward_tasks, 0);
    ASSERT_TRUE(p.simulated_seconds);
    EXPECT_DOUBLE_EQ(*p.simulated_seconds, search::CostModel(library(), host(), nullptr, "adam").weight_update(dims, dims).seconds);
  }
}

// Under a Megatron plan each process updates its own box of a split weight: the update is keyed
// by that box, and the task graph charges each device the measured update of each box it holds.
TEST(OperatorProfile, AWeightUpdateIsKeyedByTheBoxEachProcessUpdates) {
  const pcg::Graph model = small_transformer();
  const pcg::Graph megatron = search::materialize(model, search::expert_strategy(library(), model, host()), library());
  search::ProfileDatabase db;
  const std::vector<OperatorProfile> profiles = operator_profiles(library(), megatron, host(), made_up_updates(megatron), "sgd", kDevices);
  record_profiles(profiles, db);
  const search::CostModel estimated(library(), host());
  const auto boxes = search::weight_update_boxes(megatron, estimated);
  std::map<int, const OperatorProfile*> by_weight;
  for (const OperatorProfile& p : profiles) by_weight[p.node] = &p;
  std::size_t split = 0;
  for (const auto& [weight, held] : boxes) {
    const std::vector<std::int64_t>& whole = megatron.node(weight).output_shapes[0].dims;
    SCOPED_TRACE(megatron.node(weight).describe());
    ASSERT_TRUE(by_weight.count(weight));  // every device holds one box of each weight here
    ASSERT_EQ(held.size(), static_cast<std::size_t>(kDevices));
    const std::vector<std::int64_t> box = held.begin()->second.front().extent();
    EXPECT_EQ(by_weight[weight]->key.to_string(), search::weight_update_key("sgd", box, whole, "cpu").to_string());
    split += box != whole ? 1 : 0;
  }
  EXPECT_GT(split, 0u) << "the plan splits some weight";

  // Each device's update task: the measured updates of the boxes it holds, and no launch.
  std::vector<double> want(kDevices, 0);
  for (const auto& [weight, held] : boxes)
    for (const auto& [device, regions] : held)
      want[static_cast<std::size_t>(device)] += static_cast<double>(regions.size()) * (weight + 1) * 1e-6;
  const search::TaskGraph tasks = search::build_task_graph(megatron, search::CostModel(library(), host(), &db));
  int updates = 0;
  for (const search::SimTask& t : tasks.tasks) {
    if (t.label.rfind("weight update", 0) != 0) continue;
    ++updates;
    EXPECT_DOUBLE_EQ(t.seconds, want[static_cast<std::size_t>(t.device)]) << t.label;
  }
  EXPECT_EQ(updates, kDevices);
}

// Several processes run a chain of layout changes as one, from the chain's first input; one
// process runs each by itself, so each is keyed by its own input.
TEST(OperatorProfile, ALayoutChangeIsKeyedAsTheRunFusedIt) {
  const pcg::Graph chain = chain_plan(kDevices, Collective::allreduce);
  const std::vector<pcg::PortRef> sources = search::layout_change_sources(chain, search::CostModel(library(), host()));
  std::vector<OperatorTime> times(chain.size());
  for (const pcg::Node& n : chain.nodes())
    if (is_layout_change(n)) times[n.id.index()] = OperatorTime{n.tasks() * 1e-4, 0, n.tasks(), 0};
  std::size_t fused = 0;
  for (int processes : {1, kDevices})
    for (const OperatorProfile& p : operator_profiles(library(), chain, host(), times, "sgd", processes)) {
      const pcg::Node& n = chain.node(p.node);
      if (!is_layout_change(n)) continue;
      SCOPED_TRACE(n.describe() + ", " + std::to_string(processes) + " processes");
      const pcg::PortRef from = processes > 1 ? sources[n.id.index()] : n.inputs[0];
      EXPECT_EQ(p.key.to_string(),
                search::layout_change_key(chain.shape_of(from), n.output_shapes[0], chain.node(from.node).is_graph_input(), false, "cpu")
                    .to_string());
      fused += processes > 1 && from != n.inputs[0] ? 1 : 0;
    }
  EXPECT_EQ(fused, 1u) << "the replicate after the reduce";
}

TEST(OperatorProfile, RejectsTimesOfAnotherGraph) {
  try {
    operator_profiles(library(), plan(), host(), std::vector<OperatorTime>(plan().size() + 1));
    ADD_FAILURE() << "times of another graph were accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(plan().size() + 1) + " operator times for a graph of " +
                                         std::to_string(plan().size()) + " nodes"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom::runtime
