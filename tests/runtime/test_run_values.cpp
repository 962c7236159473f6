// The values a model's operators read in a run, sampled so that tasks measured alone read the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>

#include "loom/runtime/data.hpp"
#include "loom/runtime/run_values.hpp"
#include "loom/runtime/task_measurement.hpp"
#include "sharded_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

// How much longer erf takes at 1.8 to 2.5 than at 0 to 0.7 (the median of 21 passes each).
double erf_far_out_over_near() {
  const auto seconds = [](float from) {
    std::vector<float> x(16384), y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = from + 0.7f * static_cast<float>(i % 101) / 101.0f;
    std::vector<double> passes;
    for (int pass = 0; pass < 21; ++pass) {
      const auto start = std::chrono::steady_clock::now();
      for (std::size_t i = 0; i < x.size(); ++i) y[i] = std::erf(x[i]);
      passes.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() + 0 * y[pass]);
    }
    std::nth_element(passes.begin(), passes.begin() + 10, passes.end());
    return passes[10];
  };
  return seconds(1.8f) / seconds(0.0f);
}

std::vector<float> counting(std::size_t n, float from) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = from + static_cast<float>(i);
  return values;
}

TEST(RunValues, PoolsTheSamplesOfOneOperatorAttributesAndInputAndKeepsOthersApart) {
  RunValues values;
  values.add("gelu", {}, 0, counting(100, 0));
  values.add("gelu", {}, 0, counting(100, 1000));
  values.add("concat", {{"axis", 1}}, 1, counting(10, 5000));
  const std::vector<float>* gelu = values.sample("gelu", {}, 0);
  ASSERT_NE(gelu, nullptr);
  EXPECT_EQ(gelu->size(), 200u);
  EXPECT_EQ(std::count_if(gelu->begin(), gelu->end(), [](float v) { return v >= 1000; }), 100);
  EXPECT_EQ(values.sample("gelu", {}, 1), nullptr);
  EXPECT_EQ(values.sample("relu", {}, 0), nullptr);
  EXPECT_EQ(values.sample("concat", {{"axis", 0}}, 1), nullptr);
  EXPECT_EQ(values.sample("concat", {{"axis", 1}}, 0), nullptr);
  ASSERT_NE(values.sample("concat", {{"axis", 1}}, 1), nullptr);
  EXPECT_EQ(values.sample("concat", {{"axis", 1}}, 1)->front(), 5000);
  EXPECT_EQ(values.size(), 2u);
}

TEST(RunValues, ALargeInputIsSampledEvenlyAndAPoolStaysBoundedWithEveryOperatorsShare) {
  RunValues values;
  const std::size_t large = 4 * RunValues::kMaxSample;
  for (int op = 0; op < 8; ++op) values.add("relu", {}, 0, counting(large, static_cast<float>(op) * 1e6f));
  const std::vector<float>& pool = *values.sample("relu", {}, 0);
  EXPECT_LE(pool.size(), RunValues::kMaxSample);
  EXPECT_GE(pool.size(), RunValues::kMaxSample - 8);
  for (int op = 0; op < 8; ++op) {
    const float low = static_cast<float>(op) * 1e6f, high = low + static_cast<float>(large);
    const auto in_range = [&](float v) { return v >= low && v < high; };
    const auto share = std::count_if(pool.begin(), pool.end(), in_range);
    EXPECT_EQ(static_cast<std::size_t>(share), RunValues::kMaxSample / 8) << op;
    // Spread over the whole input, not its start.
    float top = low;
    for (float v : pool)
      if (in_range(v)) top = std::max(top, v);
    EXPECT_GT(top, low + 0.9f * static_cast<float>(large)) << op;
  }
}

TEST(RunValues, ASampleOfAMatrixCoversItsColumnsWhateverItsRowLength) {
  // 4,096 rows of 1,024 columns, each value its column: an even stride would fall on a few columns.
  std::vector<float> matrix(4096 * 1024);
  for (std::size_t i = 0; i < matrix.size(); ++i) matrix[i] = static_cast<float>(i % 1024);
  RunValues values;
  values.add("gelu", {}, 0, matrix);
  const std::vector<float>& pool = *values.sample("gelu", {}, 0);
  EXPECT_EQ(pool.size(), RunValues::kMaxSample);
  EXPECT_EQ(std::set<float>(pool.begin(), pool.end()).size(), 1024u);
}

TEST(RunValues, EachOperatorsInputsAreWhatItReadsInAForwardPass) {
  pcg::Graph g;
  const pcg::PortRef x{g.add_input("x", pcg::ParallelShape::unpartitioned({16, 32})), 0};
  const pcg::PortRef r{g.add_node(library(), "relu", {}, {x}), 0};
  const pcg::PortRef y{g.add_node(library(), "gelu", {}, {r}), 0};
  g.mark_output(y);
  const RunValuesReport report = sample_run_values(library(), g, 5);
  EXPECT_GE(report.seconds, 0);
  EXPECT_EQ(report.values.size(), 2u);
  // The relu reads the synthetic data of the seed, the gelu the relu's outputs.
  const Tensor<double> data = synthetic_data(library(), g, LossKind::MeanSquaredError, 5, 1)->batch(0).inputs.at("x");
  std::multiset<float> xs, relus;
  for (double v : data.data) {
    xs.insert(static_cast<float>(v));
    relus.insert(static_cast<float>(std::max(v, 0.0)));
  }
  const std::vector<float>& relu_read = *report.values.sample("relu", {}, 0);
  const std::vector<float>& gelu_read = *report.values.sample("gelu", {}, 0);
  EXPECT_EQ(std::multiset<float>(relu_read.begin(), relu_read.end()), xs);
  EXPECT_EQ(std::multiset<float>(gelu_read.begin(), gelu_read.end()), relus);
  EXPECT_TRUE(std::any_of(relu_read.begin(), relu_read.end(), [](float v) { return v < 0; }));
}

TEST(RunValues, AnInputTheModelGivesAValueKeepsItAsInTraining) {
  // An imported model's ids or masks: its own values, not the batch's.
  pcg::Graph g;
  const pcg::PortRef x{g.add_input("x", pcg::ParallelShape::unpartitioned({4, 8})), 0};
  const pcg::PortRef mask{g.add_input("mask", pcg::ParallelShape::unpartitioned({4, 8})), 0};
  g.mark_output({g.add_node(library(), "ewmul", {}, {x, mask}), 0});
  NamedTensors<double> own;
  own.emplace("mask", Tensor<double>({4, 8}, 7.0));
  const RunValuesReport report = sample_run_values(library(), g, 1, own);
  const std::vector<float>& mask_read = *report.values.sample("ewmul", {}, 1);
  ASSERT_EQ(mask_read.size(), 32u);
  EXPECT_TRUE(std::all_of(mask_read.begin(), mask_read.end(), [](float v) { return v == 7.0f; }));
  const std::vector<float>& x_read = *report.values.sample("ewmul", {}, 0);
  EXPECT_TRUE(std::all_of(x_read.begin(), x_read.end(), [](float v) { return v >= -1 && v <= 1; }));
}

TEST(RunValues, EachRunOfATaskDrawsItsInputsAnewFromTheSample) {
  const std::vector<float> sample = {-3, -0.5f, 0.25f, 2, 9};
  std::mt19937_64 rng(3);
  std::vector<float> first(4000), second(4000);
  draw_from(sample, first, rng);
  draw_from(sample, second, rng);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_NE(std::find(sample.begin(), sample.end(), first[i]), sample.end()) << first[i];
    if (first[i] != second[i]) ++differ;
  }
  // Each value of the sample drawn about as often; two runs agree where they drew the same.
  for (float v : sample) EXPECT_NEAR(static_cast<double>(std::count(first.begin(), first.end(), v)), 800, 120) << v;
  EXPECT_NEAR(static_cast<double>(differ), 3200, 150);
}

TEST(RunValues, AModelThatCannotRunIsReported) {
  pcg::Graph g;
  const pcg::PortRef x{g.add_input("x", pcg::ParallelShape::unpartitioned({4, 8})), 0};
  const pcg::PortRef w{g.add_input("w", pcg::ParallelShape::unpartitioned({8, 2}), /*is_weight=*/true), 0};
  g.mark_output({g.add_node(library(), "matmul", {}, {x, w}), 0});
  NamedTensors<double> wrong;
  wrong.emplace("w", Tensor<double>({3, 2}));  // the model's own value, of another shape
  try {
    sample_run_values(library(), g, 1, wrong);
    FAIL() << "a weight of another shape ran";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("'w'"), std::string::npos) << e.what();
  }
}

TEST(RunValues, TheMeasurerSamplesOnceWhenATaskIsFirstMeasuredAndReadsTheSample) {
  LocalTaskMeasurer measurer(library());
  int sampled = 0;
  auto values = std::make_shared<RunValues>();
  // Far out, where erf's argument x/sqrt(2) lies between 1.25 and 2.86: a longer path of glibc's
  // erf than below 0.84, where inputs drawn in [-1, 1] stay.
  std::vector<float> far(4096);
  for (std::size_t i = 0; i < far.size(); ++i) far[i] = 2.5f + static_cast<float>(i % 97) / 97.0f;
  values->add("gelu", {}, 0, far);
  measurer.measure_on([&]() -> std::shared_ptr<const RunValues> {
    ++sampled;
    return values;
  });
  EXPECT_EQ(sampled, 0);
  const auto shapes = std::vector<pcg::ParallelShape>{pcg::ParallelShape::unpartitioned({64, 256})};
  const auto on_run_values = measurer.measure(search::task_key("gelu", {}, shapes, {}, "cpu"));
  const auto other = measurer.measure(search::task_key("relu", {}, shapes, {}, "cpu"));
  EXPECT_EQ(sampled, 1);
  LocalTaskMeasurer drawing(library());
  const auto on_drawn = drawing.measure(search::task_key("gelu", {}, shapes, {}, "cpu"));
  ASSERT_TRUE(on_run_values && other && on_drawn);
  // Whether the task read the sample shows in its time only where this C library's erf takes
  // longer far out, as glibc's does today.
  if (erf_far_out_over_near() < 2) GTEST_SKIP() << "this C library's erf takes as long far out as near zero";
  EXPECT_GT(on_run_values->forward_seconds, 1.5 * on_drawn->forward_seconds);
}

}  // namespace
}  // namespace loom::runtime
