#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/search/plan.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

Plan sample_plan() {
  Plan plan;
  plan.model = "tiny";
  plan.machine = load_machine("p100").with_nodes(1);
  const int x = plan.graph.add_input("x", pcg::ParallelShape::unpartitioned({8, 4}));
  const int px = plan.graph.add_node(library(), "partition", {{"dim", 0}, {"degree", 2}}, {{x, 0}});
  const int r = plan.graph.add_node(library(), "relu", {}, {{px, 0}});
  plan.graph.set_view(px, pcg::MachineView{{0, 1}});
  plan.graph.set_view(r, pcg::MachineView{{0, 1}});
  plan.graph.mark_output({r, 0});
  plan.substitutions = {{"relu_rows", "parallel", "proved", {}, ""}};
  plan.iteration_seconds = 1e-5;
  return plan;
}

TEST(Plan, FileRoundTrip) {
  const auto dir = std::filesystem::temp_directory_path() / ("loom_plan_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "plan.json").string();
  const Plan plan = sample_plan();
  save_plan(plan, path);
  const Plan back = load_plan(path, library());
  EXPECT_EQ(back.graph, plan.graph);
  EXPECT_EQ(back.model, "tiny");
  EXPECT_EQ(back.machine.devices(), 4);
  ASSERT_EQ(back.substitutions.size(), 1u);
  EXPECT_EQ(back.substitutions[0].rule, "relu_rows");
  EXPECT_DOUBLE_EQ(back.iteration_seconds, 1e-5);
  std::ofstream(path) << "{\"format\": \"loom-plan\", \"version\": 1, \"graph\": {}}";
  try {
    load_plan(path, library());
    ADD_FAILURE() << "a plan without a machine loaded";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("plan.json: missing \"machine\""), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(Plan, FixedWeightsRoundTripAndMustBeWeights) {
  Plan plan = sample_plan();
  plan.graph.add_input("scale", pcg::ParallelShape::unpartitioned({}), true);
  plan.fixed_weights = fixed_weights_in(plan.graph, {"scale", "x", "not_there"});
  EXPECT_EQ(plan.fixed_weights, (std::set<std::string>{"scale"})) << "x is the data, not a weight";
  EXPECT_EQ(plan_from_json(plan_to_json(plan), library()).fixed_weights, plan.fixed_weights);
  EXPECT_FALSE(plan_to_json(sample_plan()).contains("fixed_weights")) << "a plan without fixed weights writes none";
  for (const auto& [name, why] :
       std::vector<std::pair<std::string, std::string>>{{"x", "fixed_weights[1]: 'x' is not a weight of the plan's graph"},
                                                        {"nowhere", "fixed_weights[1]: no node of the plan's graph is named 'nowhere'"}}) {
    nlohmann::json j = plan_to_json(plan);
    j["fixed_weights"] = nlohmann::json::array({"scale", name});
    try {
      plan_from_json(j, library());
      ADD_FAILURE() << name << " was accepted as a fixed weight";
    } catch (const LoomError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

TEST(Plan, TheLossItWasCostedWithRoundTripsAndAnUnknownOneIsRefused) {
  Plan plan = sample_plan();
  EXPECT_FALSE(plan_to_json(plan).contains("loss")) << "a plan costed with no loss named writes none";
  EXPECT_FALSE(plan_from_json(plan_to_json(plan), library()).loss);
  for (LossKind loss : {LossKind::MeanSquaredError, LossKind::CrossEntropy}) {
    plan.loss = loss;
    EXPECT_EQ(plan_from_json(plan_to_json(plan), library()).loss, loss) << loss_name(loss);
  }
  for (const auto& [given, why] : std::vector<std::pair<nlohmann::json, std::string>>{
           {"hinge", "loss: unknown loss 'hinge' (expected mse or cross-entropy)"}, {3, "loss: expected a string, got 3"}}) {
    nlohmann::json j = plan_to_json(plan);
    j["loss"] = given;
    try {
      plan_from_json(j, library());
      ADD_FAILURE() << given.dump() << " was accepted as a loss";
    } catch (const LoomError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find("loss: loss:"), std::string::npos) << e.what();
    }
  }
}

TEST(Plan, ErrorsNameThePathInsideThePlan) {
  nlohmann::json j = plan_to_json(sample_plan());
  j["graph"]["nodes"][2]["view"] = nlohmann::json::array({0});
  try {
    plan_from_json(j, library());
    ADD_FAILURE() << "a view of the wrong size was accepted";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("graph: nodes[2].view"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::search
