// The values a model's operators read in a run, sampled so that tasks measured alone read the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "loom/runtime/data.hpp"
#include "loom/runtime/run_values.hpp"
#include "loom/runtime/task_measurement.hpp"
#include "sharded_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

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
  EXPECT_GT(on_run_values->forward_seconds, 1.5 * on_drawn->forward_seconds);
}

}  // namespace
}  // namespace loom::runtime
