#include <set>

#include <gtest/gtest.h>

#include "loom/pcg/piece_moves.hpp"
#include "loom/pcg/task_layout.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/gradient_flow.hpp"
#include "loom/search/graph_split.hpp"
#include "loom/search/task_graph.hpp"
#include "loom/search/task_measurer.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

// Times each task as a fixed figure per element of its first input, and counts its calls.
class FakeMeasurer final : public TaskMeasurer {
 public:
  std::string device_kind() const override { return "cpu"; }
  std::optional<MeasuredTask> measure(const ProfileKey& task) override {
    ++calls;
    asked.push_back(task);
    if (task.op == "relu") return std::nullopt;  // as a task that cannot run alone
    std::int64_t elements = 1;
    for (std::int64_t d : task.inputs.at(0).piece_dims()) elements *= d;
    return MeasuredTask{1e-9 * static_cast<double>(elements), 3e-9 * static_cast<double>(elements), 5};
  }
  std::optional<MeasuredTask> measure_update(const std::string& optimizer, const std::vector<std::int64_t>& box,
                                             const std::vector<std::int64_t>&) override {
    ++update_calls;
    EXPECT_EQ(optimizer, "sgd");
    return MeasuredTask{2e-9 * static_cast<double>(pcg::whole_region(box).elements()), std::nullopt, 4};
  }
  std::optional<MeasuredTask> measure_accumulation(const std::vector<std::int64_t>& whole) override {
    ++accumulation_calls;
    return MeasuredTask{4e-9 * static_cast<double>(pcg::whole_region(whole).elements()), std::nullopt, 6};
  }
  std::optional<MeasuredTask> measure_layout_change(const LayoutChangeTask& change) override {
    changes.push_back(change);
    const auto elements = static_cast<double>(pcg::piece_elements(change.to));
    return MeasuredTask{5e-9 * elements, change.gradient ? std::optional<double>(7e-9 * elements) : std::nullopt, 2};
  }
  std::optional<MeasuredTask> measure_loss(const LossTask& loss) override {
    losses.push_back(loss);
    return MeasuredTask{6e-9 * static_cast<double>(pcg::whole_region(loss.box).elements()), std::nullopt, 3};
  }
  int calls = 0, update_calls = 0, accumulation_calls = 0;
  std::vector<LossTask> losses;
  std::vector<ProfileKey> asked;
  std::vector<LayoutChangeTask> changes;
};

// x[m, k] * w[k, n], then relu, unsplit.
pcg::Graph matmul_relu(std::int64_t m, std::int64_t k, std::int64_t n) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({m, k}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({k, n}), true);
  const int mm = g.add_node(library(), "matmul", {}, {{x, 0}, {w, 0}});
  g.mark_output({g.add_node(library(), "relu", {}, {{mm, 0}}), 0});
  return g;
}

TEST(MeasuringProfiles, MeasuresEachDistinctTaskOnceAndKeepsItInTheDatabase) {
  const Machine machine = load_machine("cpu_host").with_devices_per_node(1);  // a device alone in its node
  ProfileDatabase db;
  FakeMeasurer measurer;
  auto measuring = std::make_shared<MeasuringProfiles>(db, measurer);
  const CostModel model(library(), machine, measuring);
  const pcg::Graph g = matmul_relu(64, 32, 16);
  const TaskEstimate first = model.compute(g, g.node(2));
  EXPECT_TRUE(first.measured);
  EXPECT_DOUBLE_EQ(first.seconds, 64 * 32 * 1e-9 + machine.device.dispatch_overhead);
  EXPECT_DOUBLE_EQ(first.backward_seconds, 64 * 32 * 3e-9 + machine.device.dispatch_overhead);
  // Asked again, by this model or a copy on another machine of the same kind: no new measurement.
  EXPECT_DOUBLE_EQ(model.compute(g, g.node(2)).seconds, first.seconds);
  EXPECT_DOUBLE_EQ(model.on(machine.with_nodes(4)).compute(g, g.node(2)).seconds, first.seconds);
  EXPECT_EQ(measurer.calls, 1);
  EXPECT_EQ(measuring->measured(), 1);
  // The database holds it, with the roofline beside it, and the samples it is over.
  // The data input x takes no gradient: the task is measured and keyed without it.
  ASSERT_EQ(measurer.asked.size(), 1u);
  EXPECT_EQ(measurer.asked[0].gradients, (std::vector<bool>{false, true}));
  const ProfileEntry* entry =
      db.find(task_key("matmul", {}, {g.shape_of(g.node(2).inputs[0]), g.shape_of(g.node(2).inputs[1])}, {false, true}, "cpu"));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->samples, 5);
  ASSERT_TRUE(entry->simulated_seconds.has_value());
  EXPECT_DOUBLE_EQ(*entry->simulated_seconds, CostModel(library(), machine).compute(g, g.node(2)).seconds);
  // Other shapes are another task.
  const pcg::Graph bigger = matmul_relu(128, 32, 16);
  EXPECT_DOUBLE_EQ(model.compute(bigger, bigger.node(2)).seconds, 128 * 32 * 1e-9 + machine.device.dispatch_overhead);
  EXPECT_EQ(measurer.calls, 2);
}

TEST(MeasuringProfiles, AFigureMeasuredAloneIsSlowedWhereTheNodesOtherDevicesComputeToo) {
  Machine shared = load_machine("cpu_host").with_devices_per_node(2);
  shared.device.busy_node_slowdown = 1.25;
  const Machine alone = shared.with_devices_per_node(1);
  ProfileDatabase db;
  FakeMeasurer measurer;
  auto measuring = std::make_shared<MeasuringProfiles>(db, measurer);
  const pcg::Graph g = matmul_relu(64, 32, 16);
  const double overhead = shared.device.dispatch_overhead;
  const TaskEstimate by_itself = CostModel(library(), alone, measuring).compute(g, g.node(2));
  const TaskEstimate beside = CostModel(library(), shared, measuring).compute(g, g.node(2));
  EXPECT_DOUBLE_EQ(by_itself.seconds, 64 * 32 * 1e-9 + overhead);
  EXPECT_DOUBLE_EQ(beside.seconds, 1.25 * 64 * 32 * 1e-9 + overhead);
  EXPECT_DOUBLE_EQ(beside.backward_seconds, 1.25 * 64 * 32 * 3e-9 + overhead);
  EXPECT_EQ(measurer.calls, 1);
  const auto update = CostModel(library(), shared, measuring).weight_update({32, 16}, {32, 16});
  EXPECT_DOUBLE_EQ(update.seconds, 1.25 * 2e-9 * 32 * 16);
  // The roofline was measured alone too; a figure recorded in a run of the whole node was not.
  const TaskEstimate relu_alone = CostModel(library(), alone).compute(g, g.node(3));
  EXPECT_DOUBLE_EQ(CostModel(library(), shared).compute(g, g.node(3)).seconds - overhead, 1.25 * (relu_alone.seconds - overhead));
  ProfileDatabase recorded;
  recorded.record(task_key("matmul", {}, {g.shape_of(g.node(2).inputs[0]), g.shape_of(g.node(2).inputs[1])}, {false, true}, "cpu"), 4e-6,
                  std::nullopt, 10);
  EXPECT_DOUBLE_EQ(CostModel(library(), shared, &recorded).compute(g, g.node(2)).seconds, 4e-6 + overhead);
}

TEST(MeasuringProfiles, AnOptimizersStepOverABoxIsMeasuredOnce) {
  const Machine machine = load_machine("cpu_host").with_devices_per_node(1);
  ProfileDatabase db;
  FakeMeasurer measurer;
  const CostModel model(library(), machine, std::make_shared<MeasuringProfiles>(db, measurer));
  const TaskEstimate half = model.weight_update({32, 16}, {64, 16});
  EXPECT_TRUE(half.measured);
  EXPECT_DOUBLE_EQ(half.seconds, 2e-9 * 32 * 16);
  EXPECT_DOUBLE_EQ(model.weight_update({32, 16}, {64, 16}).seconds, half.seconds);
  EXPECT_EQ(measurer.update_calls, 1);
  const ProfileEntry* entry = db.find(weight_update_key("sgd", {32, 16}, {64, 16}, "cpu"));
  ASSERT_NE(entry, nullptr);
  EXPECT_DOUBLE_EQ(*entry->simulated_seconds, CostModel(library(), machine).weight_update({32, 16}, {64, 16}).seconds);
  EXPECT_EQ(measurer.calls, 0);
}

TEST(MeasuringProfiles, AddingUpAWeightsGradientsIsMeasuredOnce) {
  const Machine machine = load_machine("cpu_host").with_devices_per_node(1);
  ProfileDatabase db;
  FakeMeasurer measurer;
  const CostModel model(library(), machine, std::make_shared<MeasuringProfiles>(db, measurer));
  const TaskEstimate add = model.gradient_accumulation({64, 16});
  EXPECT_TRUE(add.measured);
  EXPECT_DOUBLE_EQ(add.seconds, 4e-9 * 64 * 16);
  EXPECT_DOUBLE_EQ(model.gradient_accumulation({64, 16}).seconds, add.seconds);
  EXPECT_EQ(measurer.accumulation_calls, 1);
  ASSERT_NE(db.find(gradient_accumulation_key({64, 16}, "cpu")), nullptr);
  // Unmeasured: two gradients read and one written, at memory bandwidth.
  const TaskEstimate roofline = CostModel(library(), machine).gradient_accumulation({64, 16});
  EXPECT_FALSE(roofline.measured);
  EXPECT_DOUBLE_EQ(roofline.seconds, 3.0 * 64 * 16 * kBytesPerElement / machine.device.memory_bandwidth);
  EXPECT_DOUBLE_EQ(*db.find(gradient_accumulation_key({64, 16}, "cpu"))->simulated_seconds, roofline.seconds);
  EXPECT_EQ(measurer.calls + measurer.update_calls, 0);
}

// The loss of each distinct piece of the output, measured once, keyed by the loss training takes,
// and charged on each device for each of its pieces in the task graph.
TEST(MeasuringProfiles, TheLossOfAPieceOfTheOutputIsMeasuredOnceForEachLoss) {
  const Machine machine = load_machine("cpu_host").with_devices_per_node(1);
  ProfileDatabase db;
  FakeMeasurer measurer;
  CostModel model(library(), machine, std::make_shared<MeasuringProfiles>(db, measurer));
  const TaskEstimate loss = model.loss_piece({32, 16}, {64, 16}, false, false);
  EXPECT_TRUE(loss.measured);
  EXPECT_DOUBLE_EQ(loss.seconds, 6e-9 * 32 * 16);
  EXPECT_DOUBLE_EQ(model.loss_piece({32, 16}, {64, 16}, false, false).seconds, loss.seconds);
  ASSERT_EQ(measurer.losses.size(), 1u);
  EXPECT_EQ(measurer.losses[0].loss, LossKind::CrossEntropy);
  ASSERT_NE(db.find(loss_key(LossKind::CrossEntropy, {32, 16}, {64, 16}, false, false, "cpu")), nullptr);
  model.take_loss(LossKind::MeanSquaredError);
  model.loss_piece({32, 16}, {64, 16}, false, false);
  model.loss_piece({32, 8}, {64, 16}, false, true);
  ASSERT_EQ(measurer.losses.size(), 3u);
  EXPECT_EQ(measurer.losses[1].loss, LossKind::MeanSquaredError);
  EXPECT_TRUE(measurer.losses[2].rows_shared);
  // Unmeasured: three passes over the piece at memory bandwidth.
  const TaskEstimate roofline = CostModel(library(), machine).loss_piece({32, 16}, {64, 16}, false, false);
  EXPECT_FALSE(roofline.measured);
  EXPECT_DOUBLE_EQ(roofline.seconds, 3.0 * 32 * 16 * kBytesPerElement / machine.device.memory_bandwidth);
  // In the task graph: the product of x [64, 32] and w [32, 16] unsplit takes the loss of its one
  // piece, the whole output, as measured.
  const pcg::Graph g = matmul_relu(64, 32, 16);
  const CostModel measuring(library(), machine, std::make_shared<MeasuringProfiles>(db, measurer));
  int losses = 0;
  for (const SimTask& t : build_task_graph(g, measuring).tasks)
    if (t.label.rfind("loss on", 0) == 0 && !t.backward) {
      ++losses;
      EXPECT_DOUBLE_EQ(t.seconds, 6e-9 * 64 * 16);
    }
  EXPECT_EQ(losses, 1);
}

// Logits split along their classes: every device holding pieces takes their rows' statistics, as
// training does, even one that holds all of its rows' classes itself (two pieces on one device).
TEST(MeasuringProfiles, ThePiecesOfLogitsSplitAlongTheirClassesAreMeasuredWithTheirRowsShared) {
  for (const pcg::MachineView& view : {pcg::MachineView{{0, 1}}, pcg::MachineView{{0, 0}}}) {
    SCOPED_TRACE("devices " + std::to_string(view.devices[0]) + ", " + std::to_string(view.devices[1]));
    pcg::Graph g;
    const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 6}));
    const int split = g.add_node(library(), "partition", {{"dim", 1}, {"degree", 2}}, {{x, 0}});
    const int out = g.add_node(library(), "relu", {}, {{split, 0}});
    for (int n : {split, out}) g.set_view(n, view);
    g.mark_output({out, 0});
    ProfileDatabase db;
    FakeMeasurer measurer;
    const CostModel model(library(), load_machine("cpu_host").with_devices_per_node(2), std::make_shared<MeasuringProfiles>(db, measurer));
    double loss_seconds = 0;
    for (const SimTask& t : build_task_graph(g, model).tasks)
      if (t.label.rfind("loss on", 0) == 0 && !t.backward && t.device == 0) loss_seconds = t.seconds;
    ASSERT_EQ(measurer.losses.size(), 1u);
    EXPECT_EQ(measurer.losses[0].box, (std::vector<std::int64_t>{8, 3}));
    EXPECT_EQ(measurer.losses[0].whole, (std::vector<std::int64_t>{8, 6}));
    EXPECT_TRUE(measurer.losses[0].rows_shared);
    EXPECT_FALSE(measurer.losses[0].probabilities);
    // Device 0 takes the loss of its one piece, or of both.
    EXPECT_GE(loss_seconds, (view.devices[1] == 0 ? 2 : 1) * 6e-9 * 8 * 3);
  }
}

// x[8, 4] split in two along its rows, w[4, 4] replicated on both devices, their product.
pcg::Graph split_rows_replicated_weight() {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 4}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({4, 4}), true);
  const pcg::MachineView both{{0, 1}};
  const int px = g.add_node(library(), "partition", {{"dim", 0}, {"degree", 2}}, {{x, 0}});
  const int rw = g.add_node(library(), "replicate", {{"degree", 2}}, {{w, 0}});
  const int mm = g.add_node(library(), "matmul", {}, {{px, 0}, {rw, 0}});
  for (int n : {px, rw, mm}) g.set_view(n, both);
  g.mark_output({mm, 0});
  return g;
}

TEST(MeasuringProfiles, EachDistinctLayoutChangeIsMeasuredOnceAsThePlanRunsIt) {
  Machine machine = load_machine("cpu_host").with_devices_per_node(2);
  machine.device.busy_node_slowdown = 1.5;
  ProfileDatabase db;
  FakeMeasurer measurer;
  const CostModel model(library(), machine, std::make_shared<MeasuringProfiles>(db, measurer));
  const pcg::Graph g = split_rows_replicated_weight();
  const TaskGraph tg = build_task_graph(g, model);
  // The data's partition (no gradient runs back through it) and the weight's replicas (one does),
  // each from a graph input; then no more, however often the plan is costed.
  ASSERT_EQ(measurer.changes.size(), 2u);
  build_task_graph(g, model);
  EXPECT_EQ(measurer.changes.size(), 2u);
  for (const LayoutChangeTask& c : measurer.changes) {
    const bool replica = c.op == "replicate";
    EXPECT_TRUE(c.from_input) << c.op;
    EXPECT_EQ(c.gradient, replica) << c.op;
    EXPECT_EQ(c.from, g.shape_of({replica ? 1 : 0, 0})) << c.op;
    EXPECT_EQ(c.to, g.shape_of({replica ? 3 : 2, 0})) << c.op;
    EXPECT_FALSE(c.ends_chain) << c.op;
    EXPECT_NE(db.find(layout_change_key(c.from, c.to, true, replica, "cpu")), nullptr) << c.op;
  }
  // Each piece of each change costs its measured figure on its device, slowed as a figure
  // measured alone is where the node's other device computes too; the replicas' gradients go back
  // through theirs.
  int replica_pieces = 0, data_pieces = 0;
  for (const SimTask& t : tg.tasks) {
    if (t.kind != TaskKind::Compute || t.backward || (t.node != 2 && t.node != 3)) continue;
    if (t.label.find("dispatch") != std::string::npos) continue;
    const bool replica = t.node == 3;
    (replica ? replica_pieces : data_pieces) += 1;
    const double elements = 16;  // a whole 4x4 replica, or half of the 8x4 rows
    EXPECT_DOUBLE_EQ(t.seconds, 1.5 * 5e-9 * elements) << t.label;
    EXPECT_DOUBLE_EQ(t.backward_seconds, replica ? 1.5 * 7e-9 * elements : 0) << t.label;
  }
  EXPECT_EQ(replica_pieces, 2);
  EXPECT_EQ(data_pieces, 2);
  // Without a measurer, and nothing in the database, a whole replica of an input is read where
  // it is: no task.
  int unmeasured = 0;
  for (const SimTask& t : build_task_graph(g, CostModel(library(), machine)).tasks)
    unmeasured += t.node == 3 && t.kind == TaskKind::Compute && t.label.find("dispatch") == std::string::npos ? 1 : 0;
  EXPECT_EQ(unmeasured, 0);
}

// y's rows split over both devices, made whole on the first, replicated onto both: the combine
// and the replicate run as one all-gather. A replica of a graph input of the same shapes beside it.
TEST(MeasuringProfiles, AFusedChainIsNotMeasuredAndAReplicaIsKeyedByWhereItsSourceComesFrom) {
  const Machine machine = load_machine("cpu_host").with_devices_per_node(2);
  const pcg::MachineView both{{0, 1}}, first{{0}};
  pcg::Graph g;
  const int y = g.add_input("y", pcg::ParallelShape::unpartitioned({8, 8}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({8, 8}), true);
  const auto add = [&](const std::string& op, pcg::AttrMap attrs, std::vector<pcg::PortRef> in, const pcg::MachineView& view) {
    const int n = g.add_node(library(), op, std::move(attrs), std::move(in));
    g.set_view(n, view);
    return n;
  };
  const int py = add("partition", {{"dim", 0}, {"degree", 2}}, {{y, 0}}, both);
  const int r = add("relu", {}, {{py, 0}}, both);
  const int combined = add("combine", {{"dim", 0}, {"degree", 2}}, {{r, 0}}, first);
  const int copies = add("replicate", {{"degree", 2}}, {{combined, 0}}, both);
  const int rw = add("replicate", {{"degree", 2}}, {{w, 0}}, both);
  g.mark_output({add("ewadd", {}, {{copies, 0}, {rw, 0}}, both), 0});
  ProfileDatabase db;
  FakeMeasurer measurer;
  build_task_graph(g, CostModel(library(), machine, std::make_shared<MeasuringProfiles>(db, measurer)));
  std::set<pcg::ParallelShape> to;
  for (const LayoutChangeTask& c : measurer.changes) {
    EXPECT_FALSE(c.ends_chain) << c.op;
    to.insert(c.to);
    // The weight's replica, from a graph input; nothing else it measured reads one but y's partition.
    EXPECT_EQ(c.from_input, c.from == g.shape_of({c.op == "replicate" ? w : y, 0}) && c.op != "combine") << c.op;
  }
  EXPECT_EQ(to.count(g.shape_of({combined, 0})), 0u) << "the combine is fused away";
  // The all-gather ends the chain: keyed by the chain's source, looked up but not measured. The
  // weight's replica, of the same shapes as a replica of an operator's output, is measured.
  EXPECT_EQ(measurer.changes.size(), 2u);
  EXPECT_NE(db.find(layout_change_key(g.shape_of({w, 0}), g.shape_of({rw, 0}), true, true, "cpu")), nullptr);
  EXPECT_EQ(db.find(layout_change_key(g.shape_of({r, 0}), g.shape_of({copies, 0}), false, true, "cpu")), nullptr);
  EXPECT_EQ(db.find(layout_change_key(g.shape_of({w, 0}), g.shape_of({rw, 0}), false, true, "cpu")), nullptr);
}

TEST(TaskKey, NamesTheInputsThatTakeNoGradientAndOnlyThose) {
  const pcg::Graph g = matmul_relu(64, 32, 16);
  EXPECT_EQ(inputs_taking_gradients(g, g.node(2)), (std::vector<bool>{false, true}));
  EXPECT_EQ(inputs_taking_gradients(g, g.node(3)), (std::vector<bool>{true}));  // made from the weight
  const std::vector<pcg::ParallelShape> shapes = {g.shape_of(g.node(2).inputs[0]), g.shape_of(g.node(2).inputs[1])};
  EXPECT_EQ(task_key("matmul", {}, shapes, {false, true}, "cpu").to_string(), "matmul{} [64, 32] [32, 16] no-grad 0 on cpu");
  EXPECT_EQ(task_key("matmul", {}, shapes, {true, true}, "cpu").to_string(), "matmul{} [64, 32] [32, 16] on cpu");
  EXPECT_TRUE(task_key("matmul", {}, shapes, {true, true}, "cpu").gradients.empty());
}

TEST(TaskKey, ATaskNoInputOfWhichTakesAGradientRunsNoBackward) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({64, 32}));
  const int r = g.add_node(library(), "relu", {}, {{x, 0}});
  g.mark_output({r, 0});
  const CostModel model(library(), load_machine("cpu_host"));
  EXPECT_GT(model.compute(g, g.node(r)).seconds, 0);
  EXPECT_EQ(model.compute(g, g.node(r)).backward_seconds, 0);
  EXPECT_GT(model.compute(g.node(r), {g.shape_of({x, 0})}).backward_seconds, 0);  // not said: every input's
}

TEST(TaskKey, ASegmentsInputTakesTheGradientItsValueTakesInTheWholeGraph) {
  // x -> relu -> matmul(w) -> relu -> matmul(v) -> relu, cut into segments of two operators.
  pcg::Graph g;
  pcg::PortRef h{g.add_input("x", pcg::ParallelShape::unpartitioned({64, 32})), 0};
  h = {g.add_node(library(), "relu", {}, {h}), 0};
  h = {g.add_node(library(), "relu", {}, {h}), 0};
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({32, 32}), true);
  h = {g.add_node(library(), "matmul", {}, {h, {w, 0}}), 0};
  h = {g.add_node(library(), "relu", {}, {h}), 0};
  const int v = g.add_input("v", pcg::ParallelShape::unpartitioned({32, 32}), true);
  h = {g.add_node(library(), "matmul", {}, {h, {v, 0}}), 0};
  g.mark_output({g.add_node(library(), "relu", {}, {h}), 0});
  const std::vector<Segment> segments = split_graph(g, 2);
  ASSERT_GE(segments.size(), 2u);
  int checked = 0;
  for (const Segment& s : segments)
    for (const pcg::Node& n : s.graph.nodes()) {
      if (n.is_graph_input()) continue;
      const pcg::Node& original = g.node(s.origin[n.id.index()]);
      EXPECT_EQ(inputs_taking_gradients(s.graph, n), inputs_taking_gradients(g, original)) << original.describe();
      ++checked;
    }
  EXPECT_EQ(checked, 6);
}

TEST(MeasuringProfiles, ATaskThatCannotRunAloneKeepsItsRooflineAndIsNotAskedAgain) {
  const Machine machine = load_machine("cpu_host");
  ProfileDatabase db;
  FakeMeasurer measurer;
  auto measuring = std::make_shared<MeasuringProfiles>(db, measurer);
  const CostModel model(library(), machine, measuring);
  const pcg::Graph g = matmul_relu(64, 32, 16);
  const TaskEstimate relu = model.compute(g, g.node(3));
  EXPECT_FALSE(relu.measured);
  EXPECT_DOUBLE_EQ(relu.seconds, CostModel(library(), machine).compute(g, g.node(3)).seconds);
  model.compute(g, g.node(3));
  EXPECT_EQ(measurer.calls, 1);
  EXPECT_EQ(measuring->not_measurable(), 1);
  EXPECT_EQ(measuring->measured(), 0);
  EXPECT_EQ(db.size(), 0u);
}

TEST(MeasuringProfiles, MachinesOfAnotherDeviceKindAreNotMeasuredButUseWhatTheDatabaseHolds) {
  ProfileDatabase db;
  FakeMeasurer measurer;
  auto measuring = std::make_shared<MeasuringProfiles>(db, measurer);
  const Machine summit = load_machine("summit");
  const CostModel model(library(), summit, measuring);
  const pcg::Graph g = matmul_relu(64, 32, 16);
  EXPECT_FALSE(model.compute(g, g.node(2)).measured);
  EXPECT_EQ(measurer.calls, 0);
  // A figure recorded for that kind (by `loom train --profile` on it) is used.
  const pcg::Node& mm = g.node(2);
  db.record(task_key(mm.op, mm.attrs, {g.shape_of(mm.inputs[0]), g.shape_of(mm.inputs[1])}, {false, true}, summit.device.kind), 2e-3);
  const TaskEstimate recorded = model.compute(g, mm);
  EXPECT_TRUE(recorded.measured);
  EXPECT_DOUBLE_EQ(recorded.seconds, 2e-3 + summit.device.dispatch_overhead);
  EXPECT_EQ(measurer.calls, 0);
}

}  // namespace
}  // namespace loom::search
