// Schedules written in the spec language become plans: operators cut by the splits their specs
// derive or by rules, pieces on the devices named, order and recomputation recorded; and every
// mistake is reported at the statement that makes it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "loom/interpreter/model_graph.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/pipeline_order.hpp"
#include "loom/search/plan.hpp"
#include "loom/search/plan_simulation.hpp"
#include "loom/search/replay.hpp"
#include "loom/search/schedule_plan.hpp"
#include "loom/search/simulator.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using test_support::outputs_on_random_inputs;

constexpr const char* kModel = R"(
model m<batch = 8, d = 16> {
  input x: [batch, d];
  weight w1: [d, d];
  weight w2: [d, d];
  let a = matmul(x, w1);
  let h = relu(a);
  let b = matmul(x, w2);
  output y = ewadd(h, b);
}
)";

std::string spec_text(const std::string& schedule) {
  const std::string ops = spec::Library::default_specs_dir() + "/ops/";
  return "import \"" + ops + "core.loom\";\nimport \"" + ops + "linalg.loom\";\nimport \"" + ops + "parallel.loom\";\n" + kModel + schedule;
}

spec::Library library_with(const std::string& schedule) { return spec::Library::from_text(spec_text(schedule), "s.loom"); }

// The line of the spec text that holds `needle`.
int line_of(const std::string& schedule, const std::string& needle) {
  std::istringstream in(spec_text(schedule));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(needle) != std::string::npos) return n;
  return -1;
}

Plan plan_of(const spec::Library& lib, const std::vector<pcg::Rule>& rules = {}) {
  const CostModel model(lib, load_machine("summit"));
  const spec::ScheduleDecl& schedule = *lib.schedules().front();
  spec::ModelSizes sizes;
  for (const auto& s : schedule.sizes) sizes[s.name] = s.default_value;
  return plan_from_schedule(lib, schedule, spec::build_model_graph(lib, *lib.find_model(schedule.model), sizes), rules, model);
}

const pcg::Node& named(const Plan& plan, const std::string& name) { return plan.graph.node(*plan.graph.find(name)); }

// The problems a schedule is refused with, each as "LINE: message".
std::vector<std::string> problems(const std::string& schedule, const std::vector<pcg::Rule>& rules = {}) {
  const spec::Library lib = library_with(schedule);
  std::vector<std::string> out;
  try {
    plan_of(lib, rules);
  } catch (const LoomError& e) {
    for (const Diagnostic& d : e.diagnostics()) out.push_back(std::to_string(d.where.line) + ": " + d.message);
  }
  return out;
}

void expect_problem(const std::string& schedule, const std::string& at, const std::string& says, const std::vector<pcg::Rule>& rules = {}) {
  const std::vector<std::string> found = problems(schedule, rules);
  const std::string prefix = std::to_string(line_of(schedule, at)) + ": ";
  bool seen = false;
  for (const std::string& p : found) seen = seen || (p.rfind(prefix, 0) == 0 && p.find(says) != std::string::npos);
  std::string all;
  for (const std::string& p : found) all += "\n  " + p;
  EXPECT_TRUE(seen) << "expected at line " << line_of(schedule, at) << ": " << says << "\nfound:" << all;
}

constexpr const char* kMegatron = R"(
schedule megatron for m {
  split a by j/2 to 0..1;
  split h by i1/2 to 0, 1;
  split b by p/2 to 0..1;
  assign y to 0;
}
)";

TEST(SchedulePlan, SplitsPlacePiecesWhereTheScheduleSaysAndKeepTheValues) {
  const spec::Library lib = library_with(kMegatron);
  const Plan plan = plan_of(lib);
  const pcg::Node& a = named(plan, "a");
  EXPECT_EQ(a.view->devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(a.output_shapes[0].D, (std::vector<std::int64_t>{1, 2}));  // j is matmul's output column
  EXPECT_EQ(named(plan, "h").output_shapes[0].D, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(named(plan, "b").output_shapes[0].V, 2);  // p is summed: partial sums
  EXPECT_EQ(named(plan, "y").view->devices, (std::vector<int>{0}));
  EXPECT_EQ(plan.source.operator_count(), 4u);
  EXPECT_GT(plan.iteration_seconds, 0);
  EXPECT_FALSE(value_difference(plan.source, plan.graph, lib));
  const auto [expected, actual] = outputs_on_random_inputs(plan.source, plan.graph, 3);
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t i = 0; i < expected[0].data.size(); ++i) EXPECT_NEAR(expected[0].data[i], actual[0].data[i], 1e-12);
}

TEST(SchedulePlan, SeveralIndicesSplitTogetherAndPiecesMayShareADevice) {
  const spec::Library lib = library_with(R"(
schedule s for m {
  assign "*" to 0;
  split a by i/2, j/2 to 0..3;
  split b by j/4 to 1, 1, 2, 2;
}
)");
  const Plan plan = plan_of(lib);
  EXPECT_FALSE(value_difference(plan.source, plan.graph, lib));
  const auto [expected, actual] = outputs_on_random_inputs(plan.source, plan.graph, 5);
  for (std::size_t i = 0; i < expected[0].data.size(); ++i) EXPECT_NEAR(expected[0].data[i], actual[0].data[i], 1e-12);
  EXPECT_EQ(named(plan, "a").output_shapes[0].D, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(named(plan, "a").view->devices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(named(plan, "b").view->devices, (std::vector<int>{1, 1, 2, 2}));  // co-shard: two pieces in turn on a device
  EXPECT_EQ(named(plan, "h").view->devices, (std::vector<int>{0}));           // placed by the wildcard
}

// `batch` cuts every operator as data parallelism does, whatever its spec calls that index.
TEST(SchedulePlan, TheBatchIndexSplitsEachOperatorAsDataParallelismDoes) {
  const spec::Library lib = library_with("schedule s for m {\n  split \"*\" by batch/4 to 0..3;\n}\n");
  const Plan plan = plan_of(lib);
  const Machine four = load_machine("summit").with_nodes(1).with_devices_per_node(4);
  const std::vector<Placement> expected = data_parallel(lib, plan.source, four);
  int split = 0;
  for (const pcg::Node& n : plan.source.nodes()) {
    if (n.is_graph_input()) continue;
    const pcg::Node& placed = named(plan, n.name);
    EXPECT_EQ(placed.output_shapes, expected[n.id.index()].config.outputs) << n.name;
    EXPECT_EQ(placed.view->devices, expected[n.id.index()].view().devices) << n.name;
    split += placed.output_shapes[0].tasks() == 4 ? 1 : 0;
  }
  EXPECT_EQ(split, 4);
  const auto [before, after] = outputs_on_random_inputs(plan.source, plan.graph, 7);
  for (std::size_t i = 0; i < before[0].data.size(); ++i) EXPECT_NEAR(before[0].data[i], after[0].data[i], 1e-12);
  // An index an operator lacks is refused with its own indices and `batch` among the choices.
  expect_problem("schedule s for m {\n  assign \"*\" to 0;\n  split a by q/2 to 0..1;\n}", "split a", "and batch (its first input's");
}

// A pattern may name operators its split does not fit, if another statement cuts them another way.
TEST(SchedulePlan, AnotherSplitReplacesOneAPatternCouldNotMake) {
  const Plan plan = plan_of(library_with("schedule s for m {\n  split \"*\" by i/2 to 0..1;\n  split h, y by i0/2 to 0..1;\n}\n"));
  for (const char* name : {"a", "h", "b", "y"}) EXPECT_EQ(named(plan, name).output_shapes[0].D, (std::vector<std::int64_t>{2, 1})) << name;
  // The other way round: h keeps its split and its devices where the later pattern does not fit it.
  const Plan kept =
      plan_of(library_with("schedule s for m {\n  assign \"*\" to 0;\n  split h by i0/2 to 2..3;\n  split \"[ah]\" by i/2 to 0..1;\n}\n"));
  EXPECT_EQ(named(kept, "a").view->devices, (std::vector<int>{0, 1}));
  EXPECT_EQ(named(kept, "h").view->devices, (std::vector<int>{2, 3}));
  EXPECT_EQ(named(kept, "h").output_shapes[0].D, (std::vector<std::int64_t>{2, 1}));
  expect_problem("schedule s for m {\n  split \"*\" by i/2 to 0..1;\n  split h by i0/2 to 0..1;\n}", "split \"*\"",
                 "'y' (op ewadd) reads its inputs through no index 'i'");
  // An operator named as it is, or a pattern that no operator takes, is always reported.
  expect_problem("schedule s for m {\n  assign \"*\" to 0;\n  split a by i/2 to 0..1;\n  split a by q/2 to 0..1;\n}", "split a by q",
                 "no index 'q'");
  expect_problem("schedule s for m {\n  split \"*\" by i0/2 to 0..1;\n  split \"*\" by q/2 to 0..1;\n  split a, b by i/2 to 0..1;\n}",
                 "by q/2", "no index 'q'");
}

TEST(SchedulePlan, ARangeTakesTheOperatorsBetweenItsEndsInTheGraphsOrder) {
  // a, h, b, y in creation order: `.. h` is a and h, `b ..` is b and y.
  const Plan plan = plan_of(library_with("schedule s for m {\n  assign .. h to 0;\n  assign \"b\" .. to 1;\n}\n"));
  EXPECT_EQ(named(plan, "a").view->devices, (std::vector<int>{0}));
  EXPECT_EQ(named(plan, "h").view->devices, (std::vector<int>{0}));
  EXPECT_EQ(named(plan, "b").view->devices, (std::vector<int>{1}));
  EXPECT_EQ(named(plan, "y").view->devices, (std::vector<int>{1}));
  expect_problem("schedule s for m {\n  assign \"*\" to 0;\n  assign y .. a to 1;\n}", "assign y", "holds no operator");
  expect_problem("schedule s for m {\n  assign \"*\" to 0;\n  assign a .. zz to 1;\n}", "assign a", "is called 'zz'");
}

TEST(SchedulePlan, OrderStagesMicroBatchesAndRecomputationReachThePlanFile) {
  const spec::Library lib = library_with(R"(
schedule s for m {
  assign a, h, b to 0;
  assign y to 3;
  order b before a;
  stages 2;
  microbatch 4;
  recompute h;
}
)");
  const Plan plan = plan_of(lib);
  ASSERT_EQ(plan.order.size(), 1u);
  EXPECT_EQ(plan.graph.node(plan.order[0].before).name, "b");
  EXPECT_EQ(plan.graph.node(plan.order[0].after).name, "a");
  // The graph's order, which every pass follows, runs b (and the layout changes it reads) ahead of a.
  EXPECT_LT(plan.order[0].before, plan.order[0].after);
  ASSERT_EQ(plan.recompute.size(), 1u);
  EXPECT_EQ(plan.graph.node(plan.recompute[0]).name, "h");
  EXPECT_EQ(plan.pipeline, (Pipeline{2, 4}));
  EXPECT_NE(plan.schedule.find("s.loom"), std::string::npos);
  const Plan read = plan_from_json(plan_to_json(plan), lib);
  EXPECT_EQ(read.order, plan.order);
  EXPECT_EQ(read.recompute, plan.recompute);
  EXPECT_EQ(read.schedule, plan.schedule);
  nlohmann::json broken = plan_to_json(plan);
  broken["recompute"] = {0};  // the input x
  EXPECT_THROW(plan_from_json(broken, lib), LoomError);
}

TEST(SchedulePlan, APlanFileWhoseGraphDoesNotHonorItsOrderIsRenumberedOnLoad) {
  const spec::Library lib = library_with("schedule s for m {\n  assign \"*\" to 0;\n  recompute h;\n}\n");
  const Plan unordered = plan_of(lib);
  const pcg::NodeId a = *unordered.graph.find("a"), b = *unordered.graph.find("b"), h = *unordered.graph.find("h");
  ASSERT_LT(a, b);
  nlohmann::json file = plan_to_json(unordered);
  file["order"] = {{b.value(), a.value()}};
  const Plan read = plan_from_json(file, lib);
  ASSERT_EQ(read.order.size(), 1u);
  EXPECT_EQ(read.graph.node(read.order[0].before).name, "b");
  EXPECT_EQ(read.graph.node(read.order[0].after).name, "a");
  EXPECT_LT(read.order[0].before, read.order[0].after);
  ASSERT_EQ(read.recompute.size(), 1u);
  EXPECT_EQ(read.graph.node(read.recompute[0]).name, "h");
  EXPECT_FALSE(value_difference(unordered.graph, read.graph, lib));
  const auto [expected, actual] = outputs_on_random_inputs(unordered.graph, read.graph, 7);
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t i = 0; i < expected[0].data.size(); ++i) EXPECT_EQ(expected[0].data[i], actual[0].data[i]);
  // An order the data contradicts is refused where the file says it.
  file["order"] = {{h.value(), a.value()}};
  try {
    plan_from_json(file, lib);
    ADD_FAILURE() << "a cyclic order was read";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("order: the order asked for and the data close a cycle"), std::string::npos) << e.what();
  }
}

TEST(SchedulePlan, AnAppliedRuleIsRecordedSoThePlanReplaysAndItsNodesAreNamed) {
  const spec::Library with = library_with(R"(
schedule s for m {
  apply fuse_matmul_relu at a, h as ah;
  split ah by i/2 to 0..1;
  assign b, y to 0;
}
)");
  const Plan plan = plan_of(with, test_support::unity_rules());
  ASSERT_EQ(plan.substitutions.size(), 1u);
  EXPECT_EQ(plan.substitutions[0].rule, "fuse_matmul_relu");
  ASSERT_EQ(plan.rules.size(), 1u);
  EXPECT_EQ(named(plan, "ah").op, "matmul_relu");
  EXPECT_EQ(named(plan, "ah").view->devices, (std::vector<int>{0, 1}));
  const std::vector<ReplayStep> steps = replay_plan(plan, with);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_FALSE(value_difference(steps.back().after, plan.graph, with));
}

TEST(SchedulePlan, EveryMistakeIsReportedAtItsStatement) {
  expect_problem("schedule s for m {\n  assign \"*\" to 0;\n  split a by q/2 to 0..1;\n}", "split a", "no index 'q'; its indices: i, j, p");
  expect_problem("schedule s for m {\n  assign \"*\" to 0;\n  split h by i0/3 to 0..2;\n}", "split h", "does not divide into 3");
  expect_problem("schedule s for m {\n  assign \"*\" to 9;\n}", "assign", "device 9 is not on the machine");
  expect_problem("schedule s for m {\n  assign \"*\" to 0;\n  assign zz to 0;\n}", "zz", "no operator of model 'm' is called 'zz'");
  expect_problem("schedule s for m {\n  assign \"*\" to 0;\n  assign x to 0;\n}", "assign x", "is an input or weight");
  expect_problem("schedule s for m {\n  assign a, h, b to 0;\n}", "schedule s", "1 operator(s) have none: 'y'");
  expect_problem("schedule s for m {\n  assign \"*\" to 0;\n  assign a to 0..1;\n}", "assign a", "runs as 1 piece(s), but 2 device(s)");
  expect_problem("schedule s for m {\n  assign \"*\" to 0;\n  apply fuse_matmul_relu at a, h;\n}", "apply", "must come before");
  expect_problem("schedule s for m {\n  apply no_such_rule at a;\n  assign \"*\" to 0;\n}", "apply", "no rule 'no_such_rule'",
                 test_support::unity_rules());
  expect_problem("schedule s for m {\n  apply fuse_matmul_relu at b;\n  assign \"*\" to 0;\n}", "apply", "does not match at b",
                 test_support::unity_rules());
  expect_problem("schedule s for m {\n  assign a, h, b to 0;\n  assign y to 0..3;\n  stages 3;\n}", "assign y", "in 2 of the 3 stages");
  expect_problem("schedule s for m {\n  assign \"*\" to 0;\n  microbatch 3;\n}", "microbatch", "3 micro-batches do not fit");
  expect_problem("schedule s for m {\n  assign \"*\" to 0;\n  split a by i/2, i/2 to 0..3;\n}", "split a", "index 'i' is split twice");
}

// y on the first stage reads b of the second: the data goes round the stages a second time.
TEST(SchedulePlan, DataGoingBackToAnEarlierStageStartsALap) {
  const Plan plan = plan_of(library_with("schedule s for m {\n  assign a, h, b to 3;\n  assign y to 0;\n  stages 2;\n}"));
  const std::vector<int> laps = pipeline_laps(plan.graph, 2, 6);
  EXPECT_EQ(laps[named(plan, "b").id.index()], 0);
  EXPECT_EQ(laps[named(plan, "y").id.index()], 1);
  EXPECT_EQ(*std::max_element(laps.begin(), laps.end()), 1);
}

TEST(SchedulePlan, AnOrderAgainstTheDataIsADeadlockNamedWithItsLines) {
  // y reads h, which reads a: ordering y first closes a cycle.
  const std::string schedule = "schedule s for m {\n  assign \"*\" to 0;\n  order y before a;\n}";
  expect_problem(schedule, "order y",
                 "deadlock: these operators wait for each other in a cycle: 'a' -> 'h' (reads its output) -> 'y' (reads its output) -> "
                 "'a' (ordered at s.loom:" +
                     std::to_string(line_of(schedule, "order y")) + ":3)");
  // A cycle of two orders between independent branches.
  const std::string two = "schedule s for m {\n  assign \"*\" to 0;\n  order b before h;\n  order h before b;\n}";
  const std::vector<std::string> found = problems(two);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].find("ordered at s.loom:" + std::to_string(line_of(two, "order b"))), std::string::npos) << found[0];
  EXPECT_NE(found[0].find("ordered at s.loom:" + std::to_string(line_of(two, "order h"))), std::string::npos) << found[0];
  // Orders that agree with the data and each other are accepted.
  EXPECT_TRUE(problems("schedule s for m {\n  assign \"*\" to 0;\n  order b before a;\n  order a before h;\n}").empty());
}

TEST(SchedulePlan, TheSimulatorKeepsTheOrderAndChargesRecomputation) {
  const std::string placed = "schedule s for m {\n  assign \"*\" to 0;\n";
  const spec::Library plain_lib = library_with(placed + "}\n");
  const spec::Library ordered_lib = library_with(placed + "  order b before a;\n  recompute a, h;\n}\n");
  const Plan plain = plan_of(plain_lib), ordered = plan_of(ordered_lib);
  const CostModel model(ordered_lib, load_machine("summit"));
  const TaskGraph tasks = plan_task_graph(ordered, model, ordered_lib);
  const Timeline timeline = simulate(tasks);
  const pcg::NodeId a = *ordered.graph.find("a"), b = *ordered.graph.find("b");
  double b_done = 0, a_start = 1e9;
  for (std::size_t i = 0; i < tasks.tasks.size(); ++i) {
    const SimTask& t = tasks.tasks[i];
    if (t.kind != TaskKind::Compute || t.backward) continue;
    if (t.node == b) b_done = std::max(b_done, timeline.finish[i]);
    if (t.node == a) a_start = std::min(a_start, timeline.start[i]);
  }
  EXPECT_GE(a_start, b_done);  // b runs first although a comes first in the graph
  // What the order and the recomputation add is marked for drawing: a's forward waits on b's by the
  // order, and the backward tasks of a and h open with their forward computed again.
  for (const SimTask& t : tasks.tasks) {
    if (t.kind != TaskKind::Compute) continue;
    const bool a_forward = t.node == a && !t.backward;
    EXPECT_EQ(t.ordered_after.empty(), !a_forward) << t.label;
    for (int d : t.ordered_after) EXPECT_EQ(tasks.tasks[static_cast<std::size_t>(d)].node, b) << t.label;
    const bool recomputed = t.backward && (t.node == a || t.node == *ordered.graph.find("h"));
    EXPECT_EQ(t.recompute_seconds > 0, recomputed) << t.label;
    if (recomputed) {
      EXPECT_LT(t.recompute_seconds, t.seconds) << t.label;
    }
  }
  // Recomputing a and h runs their forwards again. Both are computed again when the backward pass
  // starts (y's backward reads h), so the peak is as high as when they are kept; recomputing a
  // alone, its output comes back only at h's backward, once y and b have freed theirs: one piece less.
  EXPECT_GT(ordered.iteration_seconds, plain.iteration_seconds);
  const double piece = 8 * 16 * 4;  // every value of the model, float
  const double plain_bytes = plan_device_memory(plain, model, plain_lib)[0];
  EXPECT_DOUBLE_EQ(plan_device_memory(ordered, model, ordered_lib)[0], plain_bytes);
  const spec::Library a_lib = library_with(placed + "  recompute a;\n}\n");
  EXPECT_DOUBLE_EQ(plain_bytes - plan_device_memory(plan_of(a_lib), model, a_lib)[0], piece);
}

// The memory model's walk placed on the timeline: each device's curve rises through the forward
// pass and falls through the backward, its times follow the iteration, and its most is the device's
// memory as plan_device_memory gives it: kept, recomputed, and pipelined alike.
TEST(SchedulePlan, MemoryOverTimeFollowsTheTimelineAndPeaksAtTheDevicesMemory) {
  const std::string placed = "schedule s for m {\n  assign \"*\" to 0;\n";
  for (const std::string& extra :
       {std::string(), std::string("  recompute a, h;\n"), std::string("  assign y to 3;\n  stages 2;\n  microbatch 2;\n")}) {
    SCOPED_TRACE(extra.empty() ? "kept" : extra);
    const spec::Library lib = library_with(placed + extra + "}\n");
    const Plan plan = plan_of(lib);
    const CostModel model(lib, load_machine("summit"));
    const TaskGraph tasks = plan_task_graph(plan, model, lib);
    const Timeline timeline = simulate(tasks);
    const std::vector<double> peak = plan_device_memory(plan, model, lib);
    const std::vector<std::vector<MemoryPoint>> curves = plan_memory_over_time(plan, model, lib, tasks, timeline);
    ASSERT_EQ(curves.size(), peak.size());
    for (std::size_t d = 0; d < curves.size(); ++d) {
      double most = 0, last = 0;
      for (const MemoryPoint& p : curves[d]) {
        EXPECT_GE(p.seconds, last) << "device " << d;
        EXPECT_LE(p.seconds, timeline.makespan) << "device " << d;
        last = p.seconds;
        most = std::max(most, p.bytes);
      }
      EXPECT_DOUBLE_EQ(most, peak[d]) << "device " << d;
    }
    // Device 0 computes: its memory changes during the iteration, not only at its start.
    ASSERT_GE(curves[0].size(), 3u);
    EXPECT_GT(curves[0].back().seconds, 0);
    EXPECT_LT(curves[0].back().bytes, peak[0]) << "the backward pass frees activations";
  }
}

TEST(SchedulePlan, AnOrderHoldsWithinEachMicroBatchOfAPipeline) {
  const spec::Library lib = library_with(R"(
schedule s for m {
  assign a, h, b to 0;
  assign y to 3;
  order b before a;
  stages 2;
  microbatch 2;
}
)");
  const Plan plan = plan_of(lib);
  const CostModel model(lib, load_machine("summit"));
  const TaskGraph tasks = plan_task_graph(plan, model, lib);
  const Timeline timeline = simulate(tasks);
  const pcg::NodeId a = *plan.graph.find("a"), b = *plan.graph.find("b");
  std::map<int, double> b_done, a_start;
  for (std::size_t i = 0; i < tasks.tasks.size(); ++i) {
    const SimTask& t = tasks.tasks[i];
    if (t.kind != TaskKind::Compute || t.backward) continue;
    if (t.node == b) b_done[t.microbatch] = std::max(b_done[t.microbatch], timeline.finish[i]);
    if (t.node == a)
      a_start[t.microbatch] = a_start.count(t.microbatch) ? std::min(a_start[t.microbatch], timeline.start[i]) : timeline.start[i];
  }
  ASSERT_EQ(a_start.size(), 2u);
  for (const auto& [mb, start] : a_start) EXPECT_GE(start, b_done.at(mb)) << "micro-batch " << mb;
  // b of the second micro-batch is not held back for a of the first: the order is per micro-batch.
  EXPECT_LT(b_done.at(1), timeline.makespan);
  // An order from a later stage to an earlier one is refused; one that the data contradicts in a plan
  // built in memory (a file's is refused as it is read) is a cycle the simulator reports instead of a
  // wrong time.
  expect_problem("schedule s for m {\n  assign a, h, b to 0;\n  assign y to 3;\n  order y before b;\n  stages 2;\n}", "order y",
                 "which runs earlier round the stages (lap 0, stage 0): stages run in turn");
  Plan cyclic = plan;
  cyclic.order.push_back({*plan.graph.find("y"), a});
  EXPECT_THROW(simulate(plan_task_graph(cyclic, model, lib)), LoomError);
}

TEST(SchedulePlan, AGPipeStageRunsEveryForwardBeforeAnyBackwardAndHoldsEveryMicroBatch) {
  const std::string pipelined = "schedule s for m {\n  assign a, h, b to 0;\n  assign y to 3;\n  stages 2;\n  microbatch 4;\n";
  const spec::Library gpipe_lib = library_with(pipelined + "  pipeline gpipe;\n}\n");
  const spec::Library one_lib = library_with(pipelined + "}\n");
  const Plan gpipe = plan_of(gpipe_lib), one = plan_of(one_lib);
  EXPECT_EQ(gpipe.pipeline.order, PipelineOrder::GPipe);
  EXPECT_EQ(plan_from_json(plan_to_json(gpipe), gpipe_lib).pipeline, gpipe.pipeline);
  const CostModel model(gpipe_lib, load_machine("summit"));
  const TaskGraph tasks = plan_task_graph(gpipe, model, gpipe_lib);
  const Timeline timeline = simulate(tasks);
  double last_forward = 0, first_backward = 1e9;
  for (std::size_t i = 0; i < tasks.tasks.size(); ++i) {
    const SimTask& t = tasks.tasks[i];
    if (t.kind != TaskKind::Compute || t.device != 0 || t.node == pcg::kNoNode || !model.is_compute(gpipe.graph.node(t.node))) continue;
    if (t.backward)
      first_backward = std::min(first_backward, timeline.start[i]);
    else
      last_forward = std::max(last_forward, timeline.finish[i]);
  }
  EXPECT_LE(last_forward, first_backward);
  // Stage 0 holds 4 micro-batches under GPipe, 2 under 1F1B: its activations take twice the room.
  EXPECT_GT(plan_device_memory(gpipe, model, gpipe_lib)[0], plan_device_memory(one, model, one_lib)[0]);
}

}  // namespace
}  // namespace loom::search
