#include "loom/gui/plan_viewer.hpp"

#include <QTemporaryDir>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "loom/gui/gantt_chart.hpp"
#include "loom/gui/graph_view.hpp"
#include "loom/gui/plan_analysis.hpp"
#include "loom/gui/rule_sources.hpp"
#include "loom/models/registry.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"
#include "loom/search/gradient_flow.hpp"
#include "loom/search/profile_db.hpp"

namespace loom::gui {
namespace {

const std::string kSource = LOOM_SOURCE_DIR;

const pcg::Rule& find_rule(const std::vector<pcg::Rule>& rules, const std::string& id) {
  for (const auto& r : rules)
    if (r.id == id) return r;
  throw LoomError("no rule " + id);
}

// Applies `rule` at its first match in `graph`, recording the step as the search does.
pcg::Graph apply_first(const pcg::Graph& graph, const pcg::Rule& rule, search::Plan& plan) {
  const pcg::GraphIndex index(graph);
  for (const pcg::Match& m : pcg::find_matches(index, rule)) {
    auto outcome = pcg::apply_match(graph, rule, m, *base_library());
    if (!outcome.rewrite) continue;
    plan.substitutions.push_back({rule.id, pcg::category_name(rule.category), "unverified", m.nodes, ""});
    return outcome.rewrite->graph;
  }
  throw LoomError("rule " + rule.id + " does not apply");
}

// Unity's figure 1 MLP with two hand-written rules applied one after the other, saved as a plan;
// the rules as `rules` (relative to the source tree) carries them.
std::string two_step_plan(const QTemporaryDir& dir, const std::string& rules = "/specs/rules/unity.loom") {
  const auto library = base_library();
  const RuleSource unity = load_rule_source(kSource + rules);
  search::Plan plan;
  plan.model = "mlp_fig1";
  plan.machine = search::load_machine("p100");
  plan.source = models::build_model(*library, "mlp_fig1");
  pcg::Graph g = apply_first(plan.source, find_rule(unity.rules.rules, "fuse_matmul_relu"), plan);
  g = apply_first(g, find_rule(unity.rules.rules, "matmul_data_parallel"), plan);
  plan.graph = g;
  plan.rules = {find_rule(unity.rules.rules, "fuse_matmul_relu"), find_rule(unity.rules.rules, "matmul_data_parallel")};
  const std::string path = dir.filePath("plan.json").toStdString();
  search::save_plan(plan, path);
  return path;
}

TEST(PlanViewer, StepsThroughTheSubstitutions) {
  QTemporaryDir dir;
  const std::string path = two_step_plan(dir);
  PlanViewer viewer;
  viewer.load(QString::fromStdString(path));
  ASSERT_EQ(viewer.step_count(), 2) << viewer.replay_message().toStdString();
  EXPECT_EQ(viewer.current_step(), 0);
  // fuse_matmul_relu: the first matmul and the relu are matched, one matmul_relu inserted.
  const pcg::Graph source = models::build_model(*base_library(), "mlp_fig1");
  EXPECT_EQ(viewer.before_view().drawn_nodes(), static_cast<int>(source.size()));
  EXPECT_EQ(viewer.before_view().drawn_highlighted(), 2);
  EXPECT_EQ(viewer.after_view().drawn_highlighted(), 1);
  EXPECT_EQ(viewer.after_view().drawn_nodes(), static_cast<int>(source.size()) - 1);
  viewer.next_step();
  EXPECT_EQ(viewer.current_step(), 1);
  EXPECT_EQ(viewer.before_view().drawn_highlighted(), 1);  // the remaining matmul
  EXPECT_EQ(viewer.after_view().drawn_highlighted(), 4);   // partition, replicate, matmul, combine
  EXPECT_TRUE(viewer.replay_message().contains("matmul_data_parallel"));
  viewer.next_step();
  EXPECT_EQ(viewer.current_step(), 1) << "stays on the last step";
  viewer.previous_step();
  EXPECT_EQ(viewer.current_step(), 0);
  EXPECT_EQ(viewer.final_view().drawn_nodes(), static_cast<int>(source.size()) + 2);
  EXPECT_GT(viewer.gantt().drawn_tasks(), 0);
  EXPECT_EQ(viewer.memory_rows(), search::load_machine("p100").devices());
}

TEST(PlanViewer, APlanWithoutSubstitutionsSaysSo) {
  PlanViewer viewer;
  viewer.load(QString::fromStdString(kSource + "/tests/data/plan_data_parallel.json"));
  EXPECT_EQ(viewer.step_count(), 0);
  EXPECT_TRUE(viewer.replay_message().contains("no substitutions"));
  EXPECT_GT(viewer.final_view().drawn_nodes(), 0);
  EXPECT_GT(viewer.gantt().drawn_tasks(), 0);
  EXPECT_EQ(viewer.memory_rows(), 4);  // the plan's machine: one socket of four P100s
}

TEST(PlanViewer, APlanWrittenAsAScheduleSaysSoAndACyclicOrderIsRefusedNotFatal) {
  QTemporaryDir dir;
  search::Plan plan = search::load_plan(kSource + "/tests/data/plan_data_parallel.json", *base_library());
  pcg::NodeId first = pcg::kNoNode, last = pcg::kNoNode;
  for (const pcg::Node& n : plan.graph.nodes())
    if (base_library()->find_op(n.op)) (first.valid() ? last : first) = n.id;
  ASSERT_TRUE(last.valid());
  plan.schedule = "by_hand (s.loom:1:10)";
  plan.recompute = {first};
  const std::string path = dir.filePath("scheduled.json").toStdString();
  search::save_plan(plan, path);
  PlanViewer viewer;
  viewer.load(QString::fromStdString(path));
  EXPECT_TRUE(viewer.title_text().contains("written as schedule by_hand")) << viewer.title_text().toStdString();
  EXPECT_TRUE(viewer.title_text().contains("1 operators recomputed"));
  EXPECT_GT(viewer.gantt().drawn_tasks(), 0);
  // Each backward task of the recomputed operator opens with its forward again; there is no order.
  EXPECT_GT(viewer.gantt().drawn_recomputations(), 0);
  EXPECT_GT(viewer.gantt().drawn_memory_curves(), 0);
  EXPECT_EQ(viewer.gantt().drawn_order_links(), 0);
  plan.order = {{first, last}};
  search::save_plan(plan, path);
  viewer.load(QString::fromStdString(path));
  EXPECT_GT(viewer.gantt().drawn_order_links(), 0);
  // `last` reads what `first` makes: ordering it first is a cycle, refused as the file is read with
  // the file named (Studio shows it), and the viewer keeps the plan it showed.
  plan.order = {{last, first}};
  search::save_plan(plan, path);
  const QString shown = viewer.title_text();
  try {
    viewer.load(QString::fromStdString(path));
    ADD_FAILURE() << "a cyclic order was loaded";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": order: the order asked for and the data close a cycle"), std::string::npos) << e.what();
  }
  EXPECT_EQ(viewer.title_text(), shown);
  EXPECT_GT(viewer.gantt().drawn_tasks(), 0);
}

TEST(PlanAnalysis, CostsTasksAsLoomSimulateDoesFromThisUsersMeasuredProfile) {
  QTemporaryDir cache;
  const QByteArray before = qgetenv("XDG_CACHE_HOME");
  qputenv("XDG_CACHE_HOME", cache.path().toUtf8());
  search::Plan plan = search::load_plan(kSource + "/tests/data/plan_data_parallel.json", *base_library());
  plan.machine = search::load_machine("cpu_host").with_devices_per_node(4);
  const double roofline = analyze_plan(plan, *base_library()).timeline.makespan;
  // Every operator task measured at half a second, as `loom simulate` would have kept them.
  search::ProfileDatabase slow;
  for (const pcg::Node& n : plan.graph.nodes()) {
    if (n.is_graph_input() || !base_library()->find_op(n.op)) continue;
    std::vector<pcg::ParallelShape> inputs;
    for (pcg::PortRef in : n.inputs) inputs.push_back(plan.graph.shape_of(in));
    slow.record(search::task_key(n.op, n.attrs, inputs, search::inputs_taking_gradients(plan.graph, n), plan.machine.device.kind), 0.5);
  }
  const std::string path = search::user_profile_path(plan.machine.name);
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  slow.save(path);
  const double measured = analyze_plan(plan, *base_library()).timeline.makespan;
  EXPECT_LT(roofline, 0.1);
  EXPECT_GT(measured, 0.5);
  // Another machine kind does not read it; a damaged database is the roofline, not a failure.
  search::Plan p100 = search::load_plan(kSource + "/tests/data/plan_data_parallel.json", *base_library());
  std::filesystem::copy_file(path, search::user_profile_path(p100.machine.name));
  EXPECT_LT(analyze_plan(p100, *base_library()).timeline.makespan, 0.1);
  std::ofstream(path) << "{ not json";
  EXPECT_DOUBLE_EQ(analyze_plan(plan, *base_library()).timeline.makespan, roofline);
  if (before.isNull())
    qunsetenv("XDG_CACHE_HOME");
  else
    qputenv("XDG_CACHE_HOME", before);
}

TEST(PlanViewer, AMissingPlanIsAnError) {
  PlanViewer viewer;
  EXPECT_THROW(viewer.load(QString::fromStdString(kSource + "/tests/data/no_such_plan.json")), LoomError);
}

TEST(PlanViewer, ShowsAModelWithoutAPlan) {
  PlanViewer viewer;
  viewer.load_model("mlp_fig1");
  EXPECT_EQ(viewer.final_view().drawn_nodes(), static_cast<int>(models::build_model(*base_library(), "mlp_fig1").size()));
  EXPECT_EQ(viewer.gantt().drawn_tasks(), 0);
}

TEST(PlanViewer, ShowsAModelOfTheSpecLanguageWithItsOwnOperator) {
  PlanViewer viewer;
  viewer.load_model(QString::fromStdString(kSource + "/docs/examples/glu.loom:glu_mlp"));
  // x, then two layers of two weights and a glu, then the classifier's weight and matmul.
  EXPECT_EQ(viewer.final_view().drawn_nodes(), 9);
  // The user's operator runs compiled from its spec; matmul has a hand-written kernel.
  EXPECT_TRUE(viewer.kernels_text().contains("hand-written for 1 operator; compiled from their specs: glu"))
      << viewer.kernels_text().toStdString();
  EXPECT_THROW(viewer.load_model(QString::fromStdString(kSource + "/docs/examples/glu.loom:nonesuch")), LoomError);
}

TEST(PlanViewer, ShowsEachStepsProofAndTheChainsVerdict) {
  QTemporaryDir dir;
  PlanViewer viewer;
  viewer.load(QString::fromStdString(two_step_plan(dir, "/specs/rules/unity.verified.json")));
  EXPECT_TRUE(viewer.chain_verdict().startsWith("chain holds: 2 substitutions, all proved")) << viewer.chain_verdict().toStdString();
  EXPECT_TRUE(viewer.step_proof().contains("fuse_matmul_relu</b>: proved")) << viewer.step_proof().toStdString();
  EXPECT_TRUE(viewer.step_proof().contains("matmul_relu_fused (hash ")) << viewer.step_proof().toStdString();
  viewer.next_step();
  EXPECT_TRUE(viewer.step_proof().contains("matmul_data_parallel</b>: proved")) << viewer.step_proof().toStdString();

  // The same steps with rules that carry no proof: the viewer says so, step by step.
  QTemporaryDir other;
  viewer.load(QString::fromStdString(two_step_plan(other)));
  EXPECT_TRUE(viewer.chain_verdict().startsWith("chain broken: substitution 1 (rule fuse_matmul_relu) is unverified"))
      << viewer.chain_verdict().toStdString();
  EXPECT_TRUE(viewer.step_proof().contains("fuse_matmul_relu</b>: unverified")) << viewer.step_proof().toStdString();
}

}  // namespace
}  // namespace loom::gui
