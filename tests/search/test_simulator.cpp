#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <numbers>
#include <random>
#include <set>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/search/meeting_wait.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/output_loss.hpp"
#include "loom/search/plan_cost.hpp"
#include "loom/search/plan_simulation.hpp"
#include "loom/search/reshard.hpp"
#include "loom/search/simulator.hpp"
#include "loom/search/task_graph.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

SimTask compute(int device, double seconds, std::vector<int> deps = {}) {
  SimTask t;
  t.device = device;
  t.seconds = seconds;
  t.deps = std::move(deps);
  return t;
}

SimTask transfer(int from, int to, double seconds, std::vector<int> deps = {}) {
  SimTask t = compute(from, seconds, std::move(deps));
  t.kind = TaskKind::Communication;
  t.peer = to;
  return t;
}

TEST(Simulator, HandWorkedTimeline) {
  // A and B share device 0 (A first: lower index on a tie); C waits for A on device 1; the link
  // 0->1 carries D after B; E needs both C and D.
  TaskGraph g;
  g.devices = 2;
  g.tasks = {compute(0, 2), compute(0, 3), compute(1, 1, {0}), transfer(0, 1, 4, {1}), compute(1, 1, {2, 3})};
  const Timeline t = simulate(g);
  EXPECT_EQ(t.start, (std::vector<double>{0, 2, 2, 5, 9}));
  EXPECT_EQ(t.finish, (std::vector<double>{2, 5, 3, 9, 10}));
  EXPECT_EQ(t.makespan, 10);
  EXPECT_EQ(t.busy_seconds(g), (std::vector<double>{5, 2}));
}

TEST(MeetingWait, IsClarksMaximumOfNormalArrivals) {
  // Against the mean of the latest of drawn arrivals: exact for two, Clark's approximation for more.
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0, 1);
  const std::vector<std::vector<Arrival>> meetings{
      {{0, 0.5}, {0, 0.5}}, {{0.5, 0.5}, {0, 0.5}},   {{2, 0.5}, {0, 0.5}},          {{1, 3}, {0, 1}},
      {{-1, 1}, {0, 1}},    {{0, 1}, {0, 1}, {0, 1}}, {{0, 1}, {1, 0.25}, {-0.5, 2}}};
  for (const std::vector<Arrival>& arrivals : meetings) {
    double latest = 0, latest_mean = -1e9;
    const int draws = 400000;
    for (int i = 0; i < draws; ++i) {
      double at = -1e9;
      for (const Arrival& a : arrivals) at = std::max(at, a.mean + normal(rng) * std::sqrt(a.variance));
      latest += at;
    }
    for (const Arrival& a : arrivals) latest_mean = std::max(latest_mean, a.mean);
    EXPECT_NEAR(expected_meeting_wait(arrivals), latest / draws - latest_mean, arrivals.size() == 2 ? 0.01 : 0.03) << arrivals.size();
  }
  EXPECT_DOUBLE_EQ(expected_meeting_wait({{5, std::numbers::pi}, {5, std::numbers::pi}}), 1);
  EXPECT_EQ(expected_meeting_wait({{3, 0}, {0, 0}}), 0);
  EXPECT_EQ(expected_meeting_wait({}), 0);
  EXPECT_LT(expected_meeting_wait({{10, 0.5}, {0, 0.5}}), 1e-12);  // one arrives far later: it is all the meeting waits for
  // The later of two: Clark's variance against the drawn one.
  const Arrival later = later_of({0, 1}, {0, 1});
  EXPECT_NEAR(later.mean, 1 / std::sqrt(std::numbers::pi), 1e-12);
  EXPECT_NEAR(later.variance, 1 - 1 / std::numbers::pi, 1e-12);
  // drift_from_meeting_wait inverts it for two devices level on average.
  const double drift = drift_from_meeting_wait(4e-6, 100e-6);
  const double variance = (drift * 100e-6) * (drift * 100e-6);
  EXPECT_NEAR(expected_meeting_wait({{1e-3, variance}, {1e-3, variance}}), 4e-6, 1e-15);
  EXPECT_EQ(drift_from_meeting_wait(0, 1e-3), 0);
}

TEST(Simulator, DevicesThatDriftApartWaitForEachOtherWhereTheyMeet) {
  // Each device works 100 then 100 more, meets the other in a message 0->1 of 10 they wait in,
  // then again straight away in a message 1->0.
  TaskGraph g;
  g.devices = 2;
  g.tasks = {compute(0, 100),         compute(1, 100),         compute(0, 100, {0}), compute(1, 100, {1}),
             transfer(0, 1, 10, {2}), transfer(1, 0, 10, {4}), compute(0, 5, {5}),   compute(1, 5, {5})};
  g.tasks[4].holds = {0, 1};
  g.tasks[5].holds = {1, 0};
  g.tasks[4].meets = {1};
  g.tasks[5].meets = {0};
  EXPECT_EQ(simulate(g).makespan, 225);
  g.drift = 0.05;
  const Timeline t = simulate(g);
  // Each arrival spreads by 0.05 x 200 about its mean: the first meeting waits past the mean what
  // two such arrivals lead to; the second, with no work since, only its own time.
  const double wait = expected_meeting_wait({{200, 10 * 10}, {200, 10 * 10}});
  EXPECT_NEAR(wait, 0.05 * 200 / std::sqrt(std::numbers::pi), 1e-12);
  EXPECT_DOUBLE_EQ(t.finish[4], 210 + wait);
  EXPECT_DOUBLE_EQ(t.finish[5], 220 + wait);
  EXPECT_DOUBLE_EQ(t.makespan, 225 + wait);
  g.tasks[2].seconds = 120;  // changed before the meetings: simulated whole, as the waits depend on it
  EXPECT_EQ(simulate_delta(g, t, {2}).finish, simulate(g).finish);
  g.tasks[2].seconds = 100;
  // Where the message starts well past both arrivals (after another one), their drift is over by then.
  TaskGraph busy_link = g;
  busy_link.tasks.push_back(transfer(0, 1, 250));
  busy_link.tasks[4].deps.push_back(8);
  EXPECT_DOUBLE_EQ(simulate(busy_link).finish[4], 260);
  // Where device 1 has far more to do, device 0 waits for it in any case: little is added.
  g.tasks[3].seconds = 170;
  const Timeline uneven = simulate(g);
  EXPECT_GT(uneven.finish[4] - 280, 0);
  EXPECT_LT(uneven.finish[4] - 280, 1e-3 * wait);
}

TEST(Simulator, EveryStepOfOneRingWaitsTheSameWhereItsDevicesDrift) {
  // A sum of two devices: a ring step on each, each holding its own device, after both have
  // worked 100. Both steps belong to one meeting, so both wait as long; the work after it
  // starts the drift afresh.
  TaskGraph g;
  g.devices = 2;
  g.drift = 0.05;
  g.tasks = {compute(0, 100),        compute(1, 100),        transfer(0, 1, 10, {0, 1}), transfer(1, 0, 10, {0, 1}),
             compute(0, 50, {2, 3}), compute(1, 50, {2, 3}), transfer(0, 1, 10, {4, 5}), transfer(1, 0, 10, {4, 5})};
  for (int i : {2, 6}) {
    g.tasks[static_cast<std::size_t>(i)].holds = {0};
    g.tasks[static_cast<std::size_t>(i)].meets = {1};
  }
  for (int i : {3, 7}) {
    g.tasks[static_cast<std::size_t>(i)].holds = {1};
    g.tasks[static_cast<std::size_t>(i)].meets = {0};
  }
  const Timeline t = simulate(g);
  const double first = expected_meeting_wait({{100, 5 * 5}, {100, 5 * 5}});
  const double second = expected_meeting_wait({{160, 2.5 * 2.5}, {160, 2.5 * 2.5}});
  EXPECT_NEAR(t.finish[2], 110 + first, 1e-9);
  EXPECT_NEAR(t.finish[3], 110 + first, 1e-9);
  EXPECT_NEAR(t.finish[6], 110 + first + 60 + second, 1e-9);
  EXPECT_NEAR(t.finish[7], 110 + first + 60 + second, 1e-9);
}

TEST(Simulator, EveryDevicesLossWaitsTheSameForTheOthers) {
  // Three devices work 100 and 100 - 10 (one behind), then each takes the loss (10), meeting the
  // others, as the processes sum their shares; a task after the loss on each.
  TaskGraph g;
  g.devices = 3;
  g.drift = 0.05;
  g.tasks = {compute(0, 100), compute(1, 100), compute(2, 90)};
  for (int d = 0; d < 3; ++d) {
    g.tasks.push_back(compute(d, 10, {0, 1, 2}));
    for (int other = 0; other < 3; ++other)
      if (other != d) g.tasks.back().meets.push_back(other);
  }
  for (int d = 0; d < 3; ++d) g.tasks.push_back(compute(d, 5, {3 + d}));
  const Timeline t = simulate(g);
  const double wait = expected_meeting_wait({{100, 25}, {100, 25}, {90, 4.5 * 4.5}});
  EXPECT_GT(wait, 0);
  for (int d = 0; d < 3; ++d) EXPECT_NEAR(t.finish[static_cast<std::size_t>(3 + d)], 110 + wait, 1e-9) << d;
  // What a device waits there is not computing: each computed its work, its loss and the 5 after.
  const std::vector<double> busy = t.busy_seconds(g);
  EXPECT_DOUBLE_EQ(busy[0], 115);
  EXPECT_DOUBLE_EQ(busy[2], 105);
  // The meeting over, the work after it starts the spread afresh: a second meeting straight after
  // the tasks of 5 waits for 5 of work each.
  for (int d = 0; d < 3; ++d) {
    g.tasks.push_back(transfer(d, (d + 1) % 3, 1, {6, 7, 8}));
    g.tasks.back().holds = {d};
    g.tasks.back().meets = {(d + 1) % 3};
  }
  const Timeline again = simulate(g);
  const double second = expected_meeting_wait({{115 + wait, 0.0625}, {115 + wait, 0.0625}});
  for (int d = 0; d < 3; ++d) EXPECT_NEAR(again.finish[static_cast<std::size_t>(9 + d)], 116 + wait + second, 1e-9) << d;
}

TEST(Simulator, LinksAreFifoPerDirection) {
  TaskGraph g;
  g.devices = 2;
  // Two transfers 0->1 queue behind each other; 1->0 is another resource.
  g.tasks = {transfer(0, 1, 3), transfer(0, 1, 3), transfer(1, 0, 3)};
  const Timeline t = simulate(g);
  EXPECT_EQ(t.finish, (std::vector<double>{3, 6, 3}));
}

TEST(Simulator, CommunicationHoldsTheDevicesItNames) {
  // A message 0->1 and, ready at the same moment, work on device 1. Overlapped, both run at once;
  // where devices wait in their messages, the work follows the message.
  TaskGraph g;
  g.devices = 2;
  g.tasks = {transfer(0, 1, 4), compute(1, 2)};
  EXPECT_EQ(simulate(g).makespan, 4);
  g.tasks[0].holds = {0, 1};
  const Timeline held = simulate(g);
  EXPECT_EQ(held.start, (std::vector<double>{0, 4}));
  EXPECT_EQ(held.makespan, 6);
  EXPECT_EQ(simulate_delta(g, held, {1}).finish, held.finish);
}

SimTask join(std::vector<int> deps) {
  SimTask t;
  t.kind = TaskKind::Join;
  t.deps = std::move(deps);
  return t;
}

TEST(Simulator, AJoinFinishesWithItsLastDependencyAndHoldsNothing) {
  // B keeps device 0 busy until 5; the join of A (device 1, until 1) names device 0 and holds it,
  // all the same it finishes at 1; C waits for the join alone.
  TaskGraph g;
  g.devices = 2;
  g.tasks = {compute(0, 5), compute(1, 1), join({1}), compute(1, 2, {2})};
  g.tasks[2].device = 0;
  g.tasks[2].holds = {0};
  const Timeline t = simulate(g);
  EXPECT_EQ(t.start, (std::vector<double>{0, 0, 1, 1}));
  EXPECT_EQ(t.finish, (std::vector<double>{5, 1, 1, 3}));
  EXPECT_EQ(t.busy_seconds(g), (std::vector<double>{5, 3}));
}

TEST(Simulator, DeltaSimulationEqualsFullSimulation) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    TaskGraph g;
    g.devices = 3;
    const int n = 5 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      std::vector<int> deps;
      for (int j = 0; j < i; ++j)
        if (rng() % 5 == 0) deps.push_back(j);
      const int a = static_cast<int>(rng() % 3), b = static_cast<int>((a + 1 + rng() % 2) % 3);
      const double seconds = 1 + static_cast<double>(rng() % 7);
      const auto kind = rng() % 6;
      g.tasks.push_back(kind == 0 ? join(deps) : kind < 3 ? transfer(a, b, seconds, deps) : compute(a, seconds, deps));
      if (g.tasks.back().kind == TaskKind::Communication && rng() % 2 == 0) g.tasks.back().holds = {a, b};
    }
    const Timeline before = simulate(g);
    std::vector<int> changed;
    for (int k = 0; k < 1 + trial % 3; ++k) {
      const int c = static_cast<int>(rng() % static_cast<std::uint64_t>(n));
      g.tasks[static_cast<std::size_t>(c)].seconds = 1 + static_cast<double>(rng() % 9);
      changed.push_back(c);
    }
    const Timeline full = simulate(g), delta = simulate_delta(g, before, changed);
    ASSERT_EQ(delta.start, full.start) << "trial " << trial;
    ASSERT_EQ(delta.finish, full.finish) << "trial " << trial;
    ASSERT_EQ(delta.makespan, full.makespan);
  }
}

// Whether the product data_parallel combines on device 0 is the output, or read there by a ReLU.
enum class Gathered { AsOutput, ForAReLU };

// x[8, 4] and w[4, 4] on device 0; rows of x split over devices 0 and 1, w copied to both; the
// product combined back on device 0.
pcg::Graph data_parallel(const Machine&, Gathered gathered = Gathered::AsOutput) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 4}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({4, 4}), true);
  const int px = g.add_node(library(), "partition", {{"dim", 0}, {"degree", 2}}, {{x, 0}});
  const int rw = g.add_node(library(), "replicate", {{"degree", 2}}, {{w, 0}});
  const int mm = g.add_node(library(), "matmul", {}, {{px, 0}, {rw, 0}});
  const int out = g.add_node(library(), "combine", {{"dim", 0}, {"degree", 2}}, {{mm, 0}});
  for (int n : {px, rw, mm}) g.set_view(n, pcg::MachineView{{0, 1}});
  g.set_view(out, pcg::MachineView{{0}});
  if (gathered == Gathered::AsOutput) {
    g.mark_output({out, 0});
    return g;
  }
  const int act = g.add_node(library(), "relu", {}, {{out, 0}});
  g.set_view(act, pcg::MachineView{{0}});
  g.mark_output({act, 0});
  return g;
}

TEST(TaskGraph, DataParallelMatmulMovesWhatItMust) {
  const Machine m = load_machine("p100").with_nodes(1);
  const CostModel model(library(), m);
  const pcg::Graph g = data_parallel(m);
  const TaskGraph tg = build_task_graph(g, model);
  double forward_bytes = 0, backward_bytes = 0;
  int forward_transfers = 0, computes = 0;
  for (const SimTask& t : tg.tasks) {
    if (t.kind == TaskKind::Compute) {
      ++computes;
      continue;
    }
    // The gradient allreduce of a ring of two: a latency each way, the whole gradient each way.
    const Link& link = m.link_between(t.device, t.peer);
    EXPECT_DOUBLE_EQ(t.seconds, 2 * link.latency + t.bytes / link.bandwidth);
    (t.backward ? backward_bytes : forward_bytes) += t.bytes;
    forward_transfers += t.backward ? 0 : 1;
  }
  // Nothing moves forward: each device loads its rows of x and keeps its replica of w, and the
  // combined product is the graph's output, its loss computed where its pieces are. Backward, the
  // two replicas' gradients of w (16 floats) are summed.
  EXPECT_EQ(forward_transfers, 0);
  EXPECT_EQ(forward_bytes, 0);
  EXPECT_EQ(backward_bytes, 2 * 16 * 4);
  // Two matmul tasks and two copies of x's rows, forward and backward; each device's loss, forward
  // and backward; two gradient packs, two weight updates.
  EXPECT_EQ(computes, 16);
  const Timeline t = simulate(tg);
  EXPECT_GT(t.makespan, 0);
  // Device 1's matmul waits for both of its inputs to arrive.
  for (std::size_t i = 0; i < tg.tasks.size(); ++i)
    for (int d : tg.tasks[i].deps) EXPECT_GE(t.start[i], t.finish[static_cast<std::size_t>(d)]);
}

// The runtime finishes its gradient sums once the backward pass is done. The sum of the first
// layer's weight, completed by the pass's last computation, is waited in: it costs what a sum the
// devices wait in costs. The second layer's, completed before the first layer's backward, runs
// beside it at the rate of a started sum.
TEST(TaskGraph, TheSumCompletedLastIsWaitedInAndTheOthersRunBesideThePass) {
  const Machine m = with_node_sums(load_machine("p100").with_nodes(1), {2e9, 3e-6}, {8e9, 0});
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 4}));
  const int w1 = g.add_input("w1", pcg::ParallelShape::unpartitioned({4, 4}), true);
  const int w2 = g.add_input("w2", pcg::ParallelShape::unpartitioned({4, 4}), true);
  const int px = g.add_node(library(), "partition", {{"dim", 0}, {"degree", 2}}, {{x, 0}});
  const int r1 = g.add_node(library(), "replicate", {{"degree", 2}}, {{w1, 0}});
  const int r2 = g.add_node(library(), "replicate", {{"degree", 2}}, {{w2, 0}});
  const int mm1 = g.add_node(library(), "matmul", {}, {{px, 0}, {r1, 0}});
  const int mm2 = g.add_node(library(), "matmul", {}, {{mm1, 0}, {r2, 0}});
  const int out = g.add_node(library(), "combine", {{"dim", 0}, {"degree", 2}}, {{mm2, 0}});
  for (int n : {px, r1, r2, mm1, mm2}) g.set_view(n, pcg::MachineView{{0, 1}});
  g.set_view(out, pcg::MachineView{{0}});
  g.mark_output({out, 0});
  const TaskGraph tg = build_task_graph(g, CostModel(library(), m));
  const Link& link = m.link_between(0, 1);
  const double bytes = 16 * 4;
  int waited = 0, started = 0;
  for (const SimTask& t : tg.tasks) {
    if (t.kind != TaskKind::Communication || !t.backward || t.label.find("gradient allreduce") == std::string::npos) continue;
    SCOPED_TRACE(t.label);
    if (t.node == pcg::NodeId(w1)) {
      EXPECT_DOUBLE_EQ(t.seconds, link.ring_allreduce_seconds(bytes, 2));
      ++waited;
    } else {
      EXPECT_EQ(t.node, pcg::NodeId(w2));
      EXPECT_DOUBLE_EQ(t.seconds, link.started_ring_allreduce_seconds(bytes, 2));
      ++started;
    }
  }
  EXPECT_EQ(waited, 2);  // a ring of two: one step from each device
  EXPECT_EQ(started, 2);
  // Where devices wait in their communication, they meet in the sum they wait in, and not in the
  // one they start and go on from.
  Machine waiting_in_sums = m;
  waiting_in_sums.device.overlaps_communication = false;
  int sums = 0;
  for (const SimTask& t : build_task_graph(g, CostModel(library(), waiting_in_sums)).tasks) {
    if (t.kind == TaskKind::Communication && t.label.find("gradient allreduce") != std::string::npos) {
      ++sums;
      EXPECT_EQ(t.meets, t.node == pcg::NodeId(w1) ? std::vector<int>{t.peer} : std::vector<int>{}) << t.label;
    }
  }
  EXPECT_EQ(sums, 4);
  EXPECT_GT(link.ring_allreduce_seconds(bytes, 2), link.started_ring_allreduce_seconds(bytes, 2));
}

TEST(TaskGraph, DevicesMeetWhereTheyWaitForEachOther) {
  // Data parallelism over two devices, its output gathered onto device 0 for a ReLU there.
  for (const char* name : {"cpu_host", "p100"}) {
    const Machine m = load_machine(name).with_nodes(1).with_devices_per_node(2);
    const pcg::Graph g = data_parallel(m, Gathered::ForAReLU);
    const bool waiting_in_messages = !m.device.overlaps_communication;
    const TaskGraph tg = build_task_graph(g, CostModel(library(), m));
    int messages = 0, sums = 0, losses = 0;
    for (const SimTask& t : tg.tasks) {
      const std::vector<int> other = waiting_in_messages ? std::vector<int>{t.peer} : std::vector<int>{};
      if (t.kind == TaskKind::Communication && t.label.rfind("gradient allreduce", 0) == 0) {
        ++sums;  // the only layer's sum, which nothing is left to overlap
        EXPECT_EQ(t.meets, other) << name << " " << t.label;
      } else if (t.kind == TaskKind::Communication) {
        ++messages;
        EXPECT_EQ(t.meets, other) << name << " " << t.label;
      } else if (t.label.rfind("loss on", 0) == 0) {
        ++losses;
        EXPECT_EQ(t.meets, t.backward ? std::vector<int>{} : std::vector<int>{1 - t.device}) << name << " " << t.label;
      } else {
        EXPECT_TRUE(t.meets.empty()) << name << " " << t.label;
      }
    }
    EXPECT_EQ(messages, 2) << name;  // device 1's piece to device 0, and its gradient back
    EXPECT_EQ(sums, 2) << name;
    EXPECT_EQ(losses, 4) << name;
  }
}

TEST(TaskGraph, EachDeviceTakesTheLossOfItsPiecesOnceTheWholeOutputIsComputed) {
  const Machine m = load_machine("p100").with_nodes(1);
  const CostModel model(library(), m);
  const pcg::Graph g = data_parallel(m);
  const int out = g.outputs()[0].node, mm = g.node(out).inputs[0].node;
  const double bandwidth = m.device.memory_bandwidth;
  const TaskGraph tg = build_task_graph(g, model);
  std::map<int, int> losses, loss_mirrors;  // by device: the task
  for (std::size_t i = 0; i < tg.tasks.size(); ++i) {
    const SimTask& t = tg.tasks[i];
    if (t.label.rfind("loss on", 0) == 0) (t.backward ? loss_mirrors : losses)[t.device] = static_cast<int>(i);
  }
  ASSERT_EQ(losses.size(), 2u);
  ASSERT_EQ(loss_mirrors.size(), 2u);
  // Every device's loss waits for both halves of the product (4 x 4 each); it reads its own half
  // and the target and writes the gradient, and the two processes sum their shares (a double
  // each: two ring steps between the two P100s); backward gives its half its gradient.
  const Link& between = m.link_between(0, 1);
  const double shares = 2 * between.latency + 8 / between.bandwidth;
  for (const auto& [device, id] : losses) {
    const SimTask& loss = tg.tasks[static_cast<std::size_t>(id)];
    EXPECT_EQ(loss.node, out);
    EXPECT_DOUBLE_EQ(loss.seconds, 3 * 16 * 4 / bandwidth + shares);
    std::set<int> after;
    for (int d : loss.deps) after.insert(tg.tasks[static_cast<std::size_t>(d)].device);
    EXPECT_EQ(after, (std::set<int>{0, 1}));
    for (int d : loss.deps) EXPECT_EQ(tg.tasks[static_cast<std::size_t>(d)].node, mm);
    EXPECT_DOUBLE_EQ(tg.tasks[static_cast<std::size_t>(loss_mirrors.at(device))].seconds, 6 * 16 * 4 / bandwidth);
  }
  // The backward matmul on each device waits for both devices' loss.
  for (const SimTask& t : tg.tasks) {
    if (t.node != mm || !t.backward || t.kind != TaskKind::Compute) continue;
    EXPECT_EQ(std::set<int>(t.deps.begin(), t.deps.end()), (std::set<int>{loss_mirrors.at(0), loss_mirrors.at(1)})) << t.label;
  }
  // Left out, the loss is not there, and the iteration is shorter.
  const TaskGraph operators_only = build_task_graph(g, model, RunWork::LeftOut);
  for (const SimTask& t : operators_only.tasks) EXPECT_NE(t.label.rfind("loss on", 0), 0u) << t.label;
  EXPECT_EQ(operators_only.tasks.size() + 4, tg.tasks.size());
  EXPECT_LT(simulate(operators_only).makespan, simulate(tg).makespan);
}

// x [8, 6] split along its rows `rows` ways (on the first `rows` devices), then along its classes
// two ways on twice as many, an elementwise operator on each piece, its output the graph's: `op`
// notes its output `@probabilities` or not.
pcg::Graph classes_split(const spec::Library& lib, const std::string& op, int rows = 1) {
  pcg::Graph g;
  const pcg::MachineView all = pcg::MachineView::contiguous(0, 2 * rows);
  int split = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 6}));
  if (rows > 1) {
    split = g.add_node(lib, "partition", {{"dim", 0}, {"degree", rows}}, {{split, 0}});
    g.set_view(split, pcg::MachineView::contiguous(0, rows));
  }
  split = g.add_node(lib, "partition", {{"dim", 1}, {"degree", 2}}, {{split, 0}});
  g.set_view(split, all);
  const int out = g.add_node(lib, op, {}, {{split, 0}});
  g.set_view(out, all);
  g.mark_output({out, 0});
  return g;
}

// The first micro-batch's loss task on each device, by device, of `g` run as `pipeline`.
std::map<int, SimTask> losses_of(const pcg::Graph& g, const Pipeline& pipeline, const CostModel& model, const spec::Library& lib) {
  Plan plan;
  plan.graph = g;
  plan.pipeline = pipeline;
  std::map<int, SimTask> out;
  for (const SimTask& t : plan_task_graph(plan, model, lib).tasks)
    if (t.label.rfind("loss on", 0) == 0 && !t.backward && t.microbatch == 0) out.emplace(t.device, t);
  return out;
}

// Cross-entropy (the loss unless told) over logits split along their classes: the two devices
// gather their rows' statistics (two doubles for each of the batch's or micro-batch's rows from
// each) within their loss, and meet in it; over probabilities each takes the probability of the
// classes it holds, and gathers nothing.
TEST(TaskGraph, DevicesHoldingLogitsSplitAlongTheirClassesGatherTheirRowsStatistics) {
  const spec::Library lib = spec::Library::from_text("import \"" + spec::Library::default_specs_dir() + "/ops/parallel.loom\";\n" + R"(
op spread(x: [b, n]) -> [b, n] @probabilities {
  out[i, j] = x[i, j];
}
op plain(x: [b, n]) -> [b, n] {
  out[i, j] = x[i, j];
}
)");
  const Machine m = load_machine("p100").with_nodes(1).with_devices_per_node(2);
  CostModel model(lib, m);
  const auto losses = [&](const pcg::Graph& g, const Pipeline& pipeline) { return losses_of(g, pipeline, model, lib); };
  for (const Pipeline& pipeline : {Pipeline{}, Pipeline{1, 2}}) {
    SCOPED_TRACE(pipeline.microbatches == 1 ? "one batch" : "two micro-batches");
    const double rows = 8.0 / pipeline.microbatches;
    const double gathered = collective_seconds(pcg::Collective::all_gather, 2, m.link_between(0, 1), 2 * rows * kRowStatistics * 8);
    EXPECT_GT(gathered, 0);
    const std::map<int, SimTask> logits = losses(classes_split(lib, "plain"), pipeline);
    const std::map<int, SimTask> probabilities = losses(classes_split(lib, "spread"), pipeline);
    ASSERT_EQ(logits.size(), 2u);
    ASSERT_EQ(probabilities.size(), 2u);
    for (int d : {0, 1}) {
      EXPECT_NEAR(logits.at(d).seconds, probabilities.at(d).seconds + gathered, 1e-15) << d;
      EXPECT_EQ(logits.at(d).meets, std::vector<int>{1 - d});
      // A micro-batch's loss over probabilities waits for its own pieces and meets no one.
      EXPECT_EQ(probabilities.at(d).meets, pipeline.microbatches == 1 ? std::vector<int>{1 - d} : std::vector<int>{});
      // Sharing rows, a micro-batch's loss waits for both devices' pieces.
      if (pipeline.microbatches == 1)
        EXPECT_EQ(logits.at(d).deps.size(), probabilities.at(d).deps.size());
      else
        EXPECT_EQ(logits.at(d).deps.size(), 2 * probabilities.at(d).deps.size());
    }
  }
  // Split along its rows too, over four devices, each gathers with the one holding its rows' other
  // classes: two devices, four rows.
  {
    const Machine four = load_machine("p100").with_nodes(1).with_devices_per_node(4);
    CostModel on_four(lib, four);
    const auto split_both = [&](const std::string& op, const Pipeline& pipeline) {
      return losses_of(classes_split(lib, op, 2), pipeline, on_four, lib);
    };
    for (const Pipeline& pipeline : {Pipeline{}, Pipeline{1, 2}}) {
      SCOPED_TRACE(pipeline.microbatches == 1 ? "one batch" : "two micro-batches");
      const std::map<int, SimTask> logits = split_both("plain", pipeline), probabilities = split_both("spread", pipeline);
      ASSERT_EQ(logits.size(), 4u);
      const double rows = 4.0 / pipeline.microbatches;
      const double gathered = collective_seconds(pcg::Collective::all_gather, 2, four.link_between(0, 1), 2 * rows * kRowStatistics * 8);
      for (int d = 0; d < 4; ++d) {
        EXPECT_NEAR(logits.at(d).seconds, probabilities.at(d).seconds + gathered, 1e-15) << d;
        // Tasks 0 and 1 hold the first rows, 2 and 3 the others; in a step of one batch every
        // device meets every other in the loss's sum.
        std::vector<int> every_other;
        for (int other = 0; other < 4; ++other)
          if (other != d) every_other.push_back(other);
        EXPECT_EQ(logits.at(d).meets, pipeline.microbatches == 1 ? every_other : std::vector<int>{d ^ 1}) << d;
      }
    }
  }
  // Training with the mean squared error gathers nothing.
  model.take_loss(LossKind::MeanSquaredError);
  const std::map<int, SimTask> logits = losses(classes_split(lib, "plain"), Pipeline{});
  const std::map<int, SimTask> probabilities = losses(classes_split(lib, "spread"), Pipeline{});
  for (int d : {0, 1}) EXPECT_DOUBLE_EQ(logits.at(d).seconds, probabilities.at(d).seconds) << d;
}

// Stages with one micro-batch run as a step of one batch: simulated as one.
TEST(TaskGraph, StagesWithOneMicroBatchAreSimulatedAsOneBatch) {
  const Machine m = load_machine("p100").with_nodes(1).with_devices_per_node(2);
  const CostModel model(library(), m);
  const pcg::Graph g = data_parallel(m);
  const TaskGraph one_batch = build_task_graph(g, model);
  Plan plan;
  plan.graph = g;
  const std::vector<double> one_batch_memory = plan_device_memory(plan, model, library(), false);
  plan.pipeline = Pipeline{2, 1};
  const TaskGraph staged = plan_task_graph(plan, model, library());
  EXPECT_EQ(staged.tasks.size(), one_batch.tasks.size());
  EXPECT_DOUBLE_EQ(simulate(staged).makespan, simulate(one_batch).makespan);
  EXPECT_EQ(plan_device_memory(plan, model, library(), false), one_batch_memory);
  plan.pipeline = Pipeline{2, 2};
  EXPECT_NE(plan_task_graph(plan, model, library()).tasks.size(), one_batch.tasks.size());
}

TEST(TaskGraph, ReduceSumsPartialsOnTheReceiver) {
  const Machine m = load_machine("dgx_h100");
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 8}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({8, 8}), true);
  const int px = g.add_node(library(), "partition", {{"dim", 1}, {"degree", 2}}, {{x, 0}});
  const int pw = g.add_node(library(), "partition", {{"dim", 0}, {"degree", 2}}, {{w, 0}});
  const int mm = g.add_node(library(), "matmul", {}, {{px, 0}, {pw, 0}});
  const int red = g.add_node(library(), "reduce", {{"degree", 2}}, {{mm, 0}});
  const int act = g.add_node(library(), "relu", {}, {{red, 0}});  // reads the sum, so it is computed
  for (int n : {px, pw, mm}) g.set_view(n, pcg::MachineView{{0, 1}});
  g.set_view(red, pcg::MachineView{{0}});
  g.set_view(act, pcg::MachineView{{0}});
  g.mark_output({act, 0});
  const TaskGraph tg = build_task_graph(g, CostModel(library(), m));
  int sums = 0;
  double partial_bytes = 0;
  for (const SimTask& t : tg.tasks) {
    if (t.node == red && t.kind == TaskKind::Compute && !t.backward) ++sums;
    if (t.node == red && t.kind == TaskKind::Communication && !t.backward) partial_bytes += t.bytes;
  }
  EXPECT_EQ(sums, 1);
  EXPECT_EQ(partial_bytes, 8 * 8 * 4);  // device 1's whole partial product
}

TEST(TaskGraph, DevicesThatDoNotOverlapWaitInTheirCommunication) {
  Machine m = load_machine("cpu_host").with_devices_per_node(2);
  ASSERT_FALSE(m.device.overlaps_communication);
  const pcg::Graph g = data_parallel(m);
  const auto holds = [&g](const Machine& machine) {
    std::vector<std::vector<int>> out;
    for (const SimTask& t : build_task_graph(g, CostModel(library(), machine)).tasks)
      if (t.kind == TaskKind::Communication) out.push_back(t.holds);
    return out;
  };
  // The gradient ring: each device waits in its own step.
  EXPECT_EQ(holds(m), (std::vector<std::vector<int>>{{0}, {1}}));
  m.device.overlaps_communication = true;
  EXPECT_EQ(holds(m), (std::vector<std::vector<int>>{{}, {}}));
}

TEST(Memory, CountsPiecesAndWeightState) {
  const Machine m = load_machine("p100").with_nodes(1);
  const pcg::Graph g = data_parallel(m);
  const auto bytes = memory_per_device(g, m);
  // Device 0: x (32), w with gradient and two moments (4 x 16), its pieces of px, rw and mm (16
  // each) and the combined output (32). Device 1: its pieces of px, rw and mm. The backward pass
  // holds besides, at the most, the combined output's gradient and its piece of mm's on device 0
  // (32 + 16), and mm's output's and rw's on device 1 (2 x 16; px, cut from the data, takes none).
  EXPECT_EQ(bytes[0], (32 + 4 * 16 + 3 * 16 + 32 + 48) * 4.0);
  EXPECT_EQ(bytes[1], (3 * 16 + 32) * 4.0);
  EXPECT_EQ(bytes[2], 0);
  EXPECT_EQ(first_overfull_device(bytes, m), -1);
  Machine tiny = m;
  tiny.device.memory_bytes = 500;
  EXPECT_EQ(first_overfull_device(bytes, tiny), 0);
}

// Data and a weight read directly by an operator on device 2, their own views left at device 0:
// each device loads what its tasks read, so device 2 holds them as if they had been put there.
// A second reader of the weight on device 3 holds the weight, with its state, too.
TEST(Memory, AGraphInputIsHeldWhereOperatorsReadIt) {
  const Machine m = load_machine("p100").with_nodes(1);
  const auto plan = [](bool inputs_on_2, bool second_reader) {
    pcg::Graph g;
    const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({4, 4}));
    const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({4, 4}), true);
    if (inputs_on_2) {
      g.set_view(x, pcg::MachineView{{2}});
      g.set_view(w, pcg::MachineView{{2}});
    }
    const int mm = g.add_node(library(), "matmul", {}, {{x, 0}, {w, 0}});
    g.set_view(mm, pcg::MachineView{{2}});
    g.mark_output({mm, 0});
    if (second_reader) {
      const int r = g.add_node(library(), "relu", {}, {{w, 0}});
      g.set_view(r, pcg::MachineView{{3}});
      g.mark_output({r, 0});
    }
    return g;
  };
  const CostModel model(library(), m);
  const std::vector<double> read_there = plan_memory(plan(false, false), model);
  EXPECT_EQ(read_there, plan_memory(plan(true, false), model));
  EXPECT_EQ(read_there[0], 0);
  const std::vector<double> two_readers = plan_memory(plan(false, true), model);
  EXPECT_EQ(two_readers[0], 0);
  EXPECT_EQ(two_readers[2], read_there[2]);
  // w with its gradient and two moments, relu's output, and its gradient in the backward pass.
  EXPECT_EQ(two_readers[3], (4 * 16 + 16 + 16) * 4.0);
}

// Partial sums reduced on device 0, then replicated: the plan runs the two as one allreduce
// (pcg/layout_fusion.hpp), so the reduce's whole sum is never held on device 0: the plan holds
// what the same plan with the fused allreduce form holds.
TEST(Memory, ALayoutChangeFusedAwayHoldsNothing) {
  const Machine m = load_machine("p100").with_nodes(1);
  const auto plan = [](bool fused_form) {
    pcg::Graph g;
    const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 8}));
    const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({8, 12}), true);
    const pcg::MachineView all = pcg::MachineView::contiguous(0, 2), first = pcg::MachineView::contiguous(0, 1);
    const auto add = [&](const std::string& op, pcg::AttrMap attrs, std::vector<pcg::PortRef> inputs, const pcg::MachineView& view) {
      const int n = g.add_node(library(), op, std::move(attrs), std::move(inputs));
      g.set_view(n, view);
      return n;
    };
    const int px = add("partition", {{"dim", 1}, {"degree", 2}}, {{x, 0}}, all);
    const int pw = add("partition", {{"dim", 0}, {"degree", 2}}, {{w, 0}}, all);
    const int mm = add("matmul", {}, {{px, 0}, {pw, 0}}, all);
    const int copies = fused_form ? add("allreduce", {{"degree", 2}}, {{mm, 0}}, all)
                                  : add("replicate", {{"degree", 2}}, {{add("reduce", {{"degree", 2}}, {{mm, 0}}, first), 0}}, all);
    g.mark_output({add("relu", {}, {{copies, 0}}, all), 0});
    return g;
  };
  const CostModel model(library(), m);
  const pcg::Graph chain = plan(false);
  const std::vector<double> chained = plan_memory(chain, model), fused = plan_memory(plan(true), model);
  EXPECT_EQ(chained, fused);
  EXPECT_GT(chained[0], 0);
  // Counted apart, the reduce's [8, 12] sum would be held on device 0.
  MemoryOptions apart;
  apart.moves_data = [&model](const pcg::Node& n) { return !n.is_graph_input() && !model.is_compute(n); };
  apart.trained = model.trained_in(chain);
  EXPECT_GE(memory_per_device(chain, m, apart)[0], chained[0] + 8 * 12 * 4.0);
}

// A graph output gathered from the data's pieces, which nobody reads, is not gathered: the runtime
// hands the loss the pieces, and the memory model holds what the output would have been without
// the gather.
TEST(Memory, AnUnreadGatherOfTheDatasPiecesHoldsNothing) {
  const Machine m = load_machine("p100").with_nodes(1);
  const auto plan = [](bool gathered) {
    pcg::Graph g;
    const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 8}));
    const int px = g.add_node(library(), "partition", {{"dim", 0}, {"degree", 2}}, {{x, 0}});
    g.set_view(px, pcg::MachineView::contiguous(0, 2));
    if (!gathered) {
      g.mark_output({px, 0});
      return g;
    }
    const int combined = g.add_node(library(), "combine", {{"dim", 0}, {"degree", 2}}, {{px, 0}});
    g.set_view(combined, pcg::MachineView::contiguous(0, 1));
    g.mark_output({combined, 0});
    return g;
  };
  const CostModel model(library(), m);
  const pcg::Graph gathered = plan(true), pieces = plan(false);
  EXPECT_EQ(plan_memory(gathered, model), plan_memory(pieces, model));
}

// A weight the run keeps fixed (an imported model's constant) is costed as the runtime treats it:
// no gradient of it is summed or stored, no optimizer step updates it, and the product reading it
// with the data computes no gradient for either.
TEST(TaskGraph, AWeightKeptFixedTakesNoGradientSumUpdateNorState) {
  const Machine m = load_machine("p100").with_nodes(1);
  const pcg::Graph g = data_parallel(m);
  const CostModel trained(library(), m);
  CostModel fixed(library(), m);
  fixed.keep_fixed({"w"});
  EXPECT_TRUE(trained.trains(g, g.node(1)));
  EXPECT_FALSE(fixed.trains(g, g.node(1)));
  EXPECT_FALSE(fixed.trains(g, g.node(0)));  // data
  EXPECT_EQ(trained.gradient_inputs(g, g.node(4)), (std::vector<bool>{false, true}));
  EXPECT_EQ(fixed.gradient_inputs(g, g.node(4)), (std::vector<bool>{false, false}));
  const auto summary = [&](const CostModel& model) {
    double backward_bytes = 0;
    int updates = 0;
    for (const SimTask& t : build_task_graph(g, model).tasks) {
      if (t.kind != TaskKind::Compute && t.backward) backward_bytes += t.bytes;
      if (t.label.find("weight update") != std::string::npos) ++updates;
    }
    return std::make_pair(backward_bytes, updates);
  };
  EXPECT_EQ(summary(trained), std::make_pair(2.0 * 16 * 4, 2));
  EXPECT_EQ(summary(fixed), std::make_pair(0.0, 0));
  // Each device keeps its replica of w as the replicate makes it: trained, with its gradient and
  // two moments (3 x 16 floats more); fixed, the replica alone.
  const std::vector<double> with_state = plan_memory(g, trained), without = plan_memory(g, fixed);
  EXPECT_EQ(with_state[0] - without[0], 3 * 16 * 4.0);
  EXPECT_EQ(with_state[1] - without[1], 3 * 16 * 4.0);
}

// Batch norm's running statistics are weights its spec notes `@statistic`: they take no gradient.
TEST(CostModel, SpecNotedStatisticsAreNotTrained) {
  const Machine m = load_machine("p100").with_nodes(1);
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({2, 3, 4, 4}));
  std::vector<pcg::PortRef> in{{x, 0}};
  for (const char* name : {"scale", "bias", "mean", "var"})
    in.push_back({g.add_input(name, pcg::ParallelShape::unpartitioned({3}), true), 0});
  g.mark_output({g.add_node(library(), "batchnorm", {}, in), 0});
  const CostModel model(library(), m);
  std::set<std::string> trains;
  for (const pcg::Node& n : g.nodes())
    if (model.trains(g, n)) trains.insert(n.name);
  EXPECT_EQ(trains, (std::set<std::string>{"bias", "scale"}));
  EXPECT_EQ(model.gradient_inputs(g, g.node(5)), (std::vector<bool>{false, true, true, false, false}));
}

TEST(TaskGraph, ViewsOutsideTheMachineAreRefused) {
  Machine m = load_machine("summit");  // 6 devices
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 8}));
  const int r = g.add_node(library(), "relu", {}, {{x, 0}}, "act");
  g.set_view(r, pcg::MachineView{{7}});
  g.mark_output({r, 0});
  try {
    build_task_graph(g, CostModel(library(), m));
    ADD_FAILURE() << "a view outside the machine was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("\"act\" (op relu): its machine view uses device 7, but summit has 6 devices"), std::string::npos)
        << e.what();
  }
  try {
    plan_memory(g, CostModel(library(), m));
    ADD_FAILURE() << "a view outside the machine was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("\"act\" (op relu): its machine view uses device 7"), std::string::npos) << e.what();
  }
  EXPECT_THROW(memory_per_device(g, m), LoomError);
}

}  // namespace
}  // namespace loom::search
