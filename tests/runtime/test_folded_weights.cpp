// A plan whose merge folded two weights into one trains exactly as the model does, and its
// checkpoints and report keep the model's own weights, so either graph resumes from them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "loom/interpreter/rule_files.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"
#include "loom/runtime/checkpoint.hpp"
#include "loom/runtime/initializer.hpp"
#include "loom/runtime/trainer.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/materialize.hpp"
#include "runtime_test_support.hpp"

namespace loom::runtime {
namespace {

using testing::bundled_library;

// Two products of one input, added: a and b are read by their product alone.
pcg::Graph two_products() {
  const spec::Library& lib = bundled_library();
  pcg::Graph g;
  const auto shape = [](std::vector<std::int64_t> dims) { return pcg::ParallelShape::unpartitioned(std::move(dims)); };
  const pcg::NodeId x = g.add_input("x", shape({8, 16}));
  const pcg::NodeId a = g.add_input("a", shape({16, 4}), true);
  const pcg::NodeId b = g.add_input("b", shape({16, 4}), true);
  const pcg::NodeId p = g.add_node(lib, "matmul", {}, {{x, 0}, {a, 0}});
  const pcg::NodeId q = g.add_node(lib, "matmul", {}, {{x, 0}, {b, 0}});
  g.mark_output({g.add_node(lib, "ewadd", {}, {{p, 0}, {q, 0}}), 0});
  return g;
}

// Two convolutions of one input, added: their kernels' fan-in is channels x height x width, which
// only the convolution reading them tells.
pcg::Graph two_convolutions() {
  const spec::Library& lib = bundled_library();
  pcg::Graph g;
  const auto shape = [](std::vector<std::int64_t> dims) { return pcg::ParallelShape::unpartitioned(std::move(dims)); };
  const pcg::NodeId x = g.add_input("x", shape({2, 3, 6, 6}));
  const pcg::NodeId a = g.add_input("a", shape({4, 3, 3, 3}), true);
  const pcg::NodeId b = g.add_input("b", shape({4, 3, 3, 3}), true);
  const pcg::AttrMap attrs = {{"stride_h", 1}, {"stride_w", 1}, {"pad_h", 1}, {"pad_w", 1}, {"act", 0}};
  const pcg::NodeId p = g.add_node(lib, "conv2d", attrs, {{x, 0}, {a, 0}});
  const pcg::NodeId q = g.add_node(lib, "conv2d", attrs, {{x, 0}, {b, 0}});
  g.mark_output({g.add_node(lib, "ewadd", {}, {{p, 0}, {q, 0}}), 0});
  return g;
}

pcg::Graph merged(const pcg::Graph& g, const std::string& rule_id = "merge_matmuls") {
  const spec::Library& lib = bundled_library();
  const auto rules =
      spec::load_rule_file(lib, {spec::Library::default_specs_dir()}, spec::Library::default_specs_dir() + "/rules/unity.loom");
  const auto rule = std::find_if(rules.begin(), rules.end(), [&](const pcg::Rule& r) { return r.id == rule_id; });
  for (const pcg::Match& m : pcg::find_matches(pcg::GraphIndex(g), *rule))
    if (auto outcome = pcg::apply_match(g, *rule, m, lib); outcome.rewrite) return std::move(outcome.rewrite->graph);
  throw LoomError(rule_id + " applies nowhere");
}

TrainSettings adam(std::int64_t steps) {
  TrainSettings s;
  s.steps = steps;
  s.optimizer = optimizer_from_name("adam");
  s.run_name = "two_products";
  return s;
}

void expect_same_run(const TrainReport& got, const TrainReport& want) {
  ASSERT_EQ(got.losses.size(), want.losses.size());
  for (std::size_t i = 0; i < want.losses.size(); ++i) EXPECT_NEAR(got.losses[i], want.losses[i], 1e-12 * std::abs(want.losses[i]));
  ASSERT_EQ(got.weights.size(), want.weights.size());
  for (const auto& [name, w] : want.weights) EXPECT_LT(testing::relative_error(got.weights.at(name), w), 1e-12) << name;
}

TEST(FoldedWeights, AMergedPlanTrainsLikeTheModelAndReportsItsWeights) {
  const pcg::Graph model = two_products(), plan = merged(model);
  ASSERT_TRUE(plan.find("a+b") || plan.find("b+a"));
  ASSERT_FALSE(plan.find("a"));
  const TrainReport want = train<double>(bundled_library(), model, adam(5));
  const TrainReport got = train<double>(bundled_library(), plan, adam(5));
  expect_same_run(got, want);  // by the model's names: a and b, not the folded weight
  EXPECT_NE(got.weights.at("a").data, initial_weights(bundled_library(), model, 1).at("a").data);
}

TEST(FoldedWeights, ADataParallelPlanOfTheMergeKeepsItsRecipeAndTrainsLikeTheModel) {
  const spec::Library& lib = bundled_library();
  const pcg::Graph model = two_products(), merge = merged(model);
  const pcg::Graph plan = search::materialize(merge, search::data_parallel(lib, merge, search::load_machine("p100")), lib);
  ASSERT_TRUE(std::any_of(plan.nodes().begin(), plan.nodes().end(), [](const pcg::Node& n) { return n.op == "replicate"; }));
  ASSERT_TRUE(std::any_of(plan.nodes().begin(), plan.nodes().end(), [](const pcg::Node& n) { return static_cast<bool>(n.folded_from); }));
  expect_same_run(train<double>(lib, plan, adam(4)), train<double>(lib, model, adam(4)));
}

TEST(FoldedWeights, TheFoldedWeightStartsAsItsPartsDo) {
  const pcg::Graph model = two_products(), plan = merged(model);
  const auto parts = initial_weights(bundled_library(), model, 3);
  const auto folded = initial_weights(bundled_library(), plan, 3);
  ASSERT_EQ(folded.size(), 1u);
  const auto& [name, w] = *folded.begin();
  const auto &first = parts.at(name.substr(0, 1)), &second = parts.at(name.substr(2, 1));
  // concat<1>: each row holds the first part's row, then the second's.
  ASSERT_EQ(w.dims, (std::vector<std::int64_t>{16, 8}));
  for (std::int64_t r = 0; r < 16; ++r)
    for (std::int64_t c = 0; c < 8; ++c) EXPECT_EQ(w.at({r, c}), c < 4 ? first.at({r, c}) : second.at({r, c - 4})) << r << ", " << c;
}

TEST(FoldedWeights, MergedKernelsStartAsTheModelsAndTrainLikeIt) {
  const pcg::Graph model = two_convolutions(), plan = merged(model, "merge_convs");
  const auto parts = initial_weights(bundled_library(), model, 5);
  const auto folded = initial_weights(bundled_library(), plan, 5);
  ASSERT_EQ(folded.size(), 1u);
  const auto& [name, w] = *folded.begin();
  const auto &first = parts.at(name.substr(0, 1)), &second = parts.at(name.substr(2, 1));
  ASSERT_EQ(w.dims, (std::vector<std::int64_t>{8, 3, 3, 3}));
  const std::size_t half = first.data.size();
  for (std::size_t i = 0; i < w.data.size(); ++i) ASSERT_EQ(w.data[i], i < half ? first.data[i] : second.data[i - half]) << i;
  expect_same_run(train<double>(bundled_library(), plan, adam(3)), train<double>(bundled_library(), model, adam(3)));
}

TEST(FoldedWeights, ACheckpointKeepsThePartsAndEitherGraphResumesFromIt) {
  const pcg::Graph model = two_products(), plan = merged(model);
  const TrainReport whole = train<double>(bundled_library(), model, adam(6));
  const std::string path = (std::filesystem::temp_directory_path() / ("loom_folded_" + std::to_string(::getpid()) + ".ckpt")).string();
  TrainSettings first = adam(3);
  first.checkpoint = path;
  train<double>(bundled_library(), plan, first);
  TrainSettings model_first = first;
  model_first.checkpoint = path + ".model";
  train<double>(bundled_library(), model, model_first);
  const auto kept = checkpoint_weights(path), model_kept = checkpoint_weights(model_first.checkpoint);
  std::filesystem::remove(model_first.checkpoint);
  ASSERT_EQ(kept.size(), model_kept.size());
  for (const auto& [name, w] : model_kept) {
    ASSERT_TRUE(kept.count(name)) << name;
    EXPECT_LT(testing::relative_error(kept.at(name), w), 1e-12) << name;
  }
  for (const pcg::Graph* g : {&model, &plan}) {
    TrainSettings second = adam(6);
    second.resume = path;
    const TrainReport resumed = train<double>(bundled_library(), *g, second);
    EXPECT_EQ(resumed.first_step, 3);
    expect_same_run(resumed, whole);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::runtime
