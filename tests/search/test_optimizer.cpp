#include <gtest/gtest.h>

#include "loom/models/registry.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/optimizer.hpp"
#include "search_support.hpp"

namespace loom::search {
namespace {

using namespace test_support;

// A mapping barred from splitting anything leaves the model on one device: the refinement's second
// walk, which starts from data parallelism, must find the faster plan that a short first walk
// misses.
TEST(Optimizer, TheRefinementAlsoStartsFromDataParallelismOverTheJointGraph) {
  const pcg::Graph g = models::build_model(library(), "mlp_fig1", {{"batch", 1024}});
  const Machine machine = load_machine("summit").with_devices_per_node(4);
  const CostModel model(library(), machine);
  OptimizeSettings settings;
  settings.baselines = false;
  settings.pipeline = false;
  settings.mcmc_iterations = 3;
  settings.mcmc_seconds = 0;
  settings.joint.mapping.admit = [](const pcg::Node&, const ParallelConfig&) { return false; };
  const OptimizeReport report = optimize(library(), g, {}, model, settings);
  const double data = placement_seconds(library(), report.graph, data_parallel(library(), report.graph, machine), model);
  ASSERT_LT(data, report.joint_seconds) << "the barred mapping should lose to data parallelism here";
  EXPECT_EQ(report.refinement_start, "data_parallel");
  EXPECT_LE(report.refined_seconds, data);
  EXPECT_EQ(report.best_seconds, report.refined_seconds);
  EXPECT_NEAR(placement_seconds(library(), report.graph, report.placements, model), report.best_seconds, 1e-12);
}

}  // namespace
}  // namespace loom::search
