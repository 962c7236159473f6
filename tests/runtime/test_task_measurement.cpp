// One operator task run alone and timed, as `loom optimize` measures before it searches.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "loom/runtime/task_measurement.hpp"
#include "sharded_check.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

// One task of `op` reading pieces of `shapes`, every input taking its gradient unless `gradients`
// says otherwise.
search::ProfileKey task(const std::string& op, std::vector<pcg::ParallelShape> shapes, std::vector<bool> gradients = {}) {
  return search::task_key(op, {}, std::move(shapes), gradients, "cpu");
}

pcg::ParallelShape whole(std::vector<std::int64_t> dims) { return pcg::ParallelShape::unpartitioned(std::move(dims)); }

TEST(TaskMeasurement, TimesTheForwardAndBackwardOfOneTaskAndMoreWorkTakesLonger) {
  LocalTaskMeasurer measurer(library());
  EXPECT_EQ(measurer.device_kind(), "cpu");
  const auto small_shapes = std::vector<pcg::ParallelShape>{whole({64, 256}), whole({256, 256})};
  const auto large_shapes = std::vector<pcg::ParallelShape>{whole({1024, 256}), whole({256, 256})};
  const auto small = measurer.measure(task("matmul", small_shapes));
  const auto large = measurer.measure(task("matmul", large_shapes));
  ASSERT_TRUE(small && large);
  EXPECT_GE(small->samples, 3);
  EXPECT_GT(small->forward_seconds, 0);
  ASSERT_TRUE(small->backward_seconds.has_value());
  EXPECT_GT(*small->backward_seconds, 0);
  // 16 times the rows: 16 times the multiply-adds.
  EXPECT_GT(large->forward_seconds, 3 * small->forward_seconds);
  EXPECT_GT(*large->backward_seconds, 3 * *small->backward_seconds);
}

TEST(TaskMeasurement, EachRunsSignsAreDrawnAnewAndTheMagnitudesKept) {
  std::vector<float> first(10000);
  for (std::size_t i = 0; i < first.size(); ++i) first[i] = static_cast<float>(i + 1);
  std::mt19937_64 rng(7);
  std::vector<float> second = first;
  redraw_signs(second, rng);
  std::vector<float> third = second;
  redraw_signs(third, rng);
  const auto flipped = [](const std::vector<float>& a, const std::vector<float>& b) {
    std::size_t n = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(std::abs(a[i]), std::abs(b[i])) << i;
      if (a[i] != b[i]) ++n;
    }
    return n;
  };
  // Each element's sign a fair coin: about half flip, and each run's flips differ from the last's.
  EXPECT_NEAR(static_cast<double>(flipped(first, second)), 5000, 300);
  EXPECT_NEAR(static_cast<double>(flipped(second, third)), 5000, 300);
  EXPECT_NEAR(static_cast<double>(flipped(first, third)), 5000, 300);
}

TEST(TaskMeasurement, AnInputThatTakesNoGradientIsNotDifferentiated) {
  LocalTaskMeasurer measurer(library());
  const auto shapes = std::vector<pcg::ParallelShape>{whole({256, 256}), whole({256, 256})};
  const auto both = measurer.measure(task("matmul", shapes));
  const auto weight_only = measurer.measure(task("matmul", shapes, {false, true}));
  const auto neither = measurer.measure(task("matmul", shapes, {false, false}));
  ASSERT_TRUE(both && weight_only && neither);
  ASSERT_TRUE(both->backward_seconds && weight_only->backward_seconds);
  // One product in the backward instead of two.
  EXPECT_LT(*weight_only->backward_seconds, 0.85 * *both->backward_seconds);
  EXPECT_FALSE(neither->backward_seconds.has_value());
}

TEST(TaskMeasurement, AnOptimizersStepOverABoxOfAWeightTakesLessThanOverAllOfIt) {
  LocalTaskMeasurer measurer(library());
  const auto all = measurer.measure_update("sgd", {512, 512}, {512, 512});
  const auto eighth = measurer.measure_update("sgd", {512, 64}, {512, 512});  // 512 strided runs
  const auto adam = measurer.measure_update("adam", {512, 512}, {512, 512});
  ASSERT_TRUE(all && eighth && adam);
  EXPECT_GE(all->samples, 3);
  EXPECT_FALSE(all->backward_seconds.has_value());
  EXPECT_LT(eighth->forward_seconds, 0.5 * all->forward_seconds);
  EXPECT_GT(adam->forward_seconds, all->forward_seconds);  // two moments more to read and write
  EXPECT_FALSE(measurer.measure_update("sgd", {600, 64}, {512, 512}).has_value());
}

TEST(TaskMeasurement, AddingUpGradientsTakesLongerTheMoreElements) {
  LocalTaskMeasurer measurer(library());
  const auto small = measurer.measure_accumulation({64, 64});
  const auto large = measurer.measure_accumulation({1024, 512});  // 128 times the elements
  ASSERT_TRUE(small && large);
  EXPECT_GE(small->samples, 3);
  EXPECT_GT(small->forward_seconds, 0);
  EXPECT_FALSE(small->backward_seconds.has_value());
  EXPECT_GT(large->forward_seconds, 8 * small->forward_seconds);
  EXPECT_FALSE(measurer.measure_accumulation({0, 4}).has_value());
}

// Every kind of loss piece is measured; a piece of sixteen times the elements takes longer, and
// cross-entropy over logits, an exponential an element, longer than the mean squared error's
// difference.
TEST(TaskMeasurement, TheLossOfAPieceTakesLongerTheMoreItComputes) {
  LocalTaskMeasurer measurer(library());
  const auto measured = [&](search::LossKind loss, std::vector<std::int64_t> box, bool probabilities, bool rows_shared) {
    const auto t = measurer.measure_loss({loss, std::move(box), {256, 4096}, probabilities, rows_shared});
    EXPECT_TRUE(t.has_value());
    EXPECT_GE(t ? t->samples : 0, 3);
    EXPECT_FALSE(t && t->backward_seconds.has_value());
    return t ? t->forward_seconds : 0.0;
  };
  const double logits = measured(search::LossKind::CrossEntropy, {256, 4096}, false, false);
  const double few_logits = measured(search::LossKind::CrossEntropy, {16, 4096}, false, false);
  const double mse = measured(search::LossKind::MeanSquaredError, {256, 4096}, false, false);
  EXPECT_GT(measured(search::LossKind::CrossEntropy, {256, 4096}, true, false), 0);
  EXPECT_GT(measured(search::LossKind::CrossEntropy, {256, 2048}, false, true), 0);
  EXPECT_GT(few_logits, 0);
  EXPECT_GT(logits, 4 * few_logits);
  EXPECT_GT(logits, mse);
  EXPECT_FALSE(measurer.measure_loss({search::LossKind::CrossEntropy, {0, 4}, {4, 4}, false, false}).has_value());
  // Logits of some of the classes whose rows are not shared cannot be taken alone.
  EXPECT_FALSE(measurer.measure_loss({search::LossKind::CrossEntropy, {4, 2}, {4, 4}, false, false}).has_value());
}

TEST(TaskMeasurement, ATaskOfASplitOperatorRunsOnItsPieces) {
  LocalTaskMeasurer measurer(library());
  // Rows cut in 8, the weight replicated: each task multiplies 64 of the 512 rows.
  const pcg::ParallelShape rows = pcg::ParallelShape::partitioned({512, 128}, {8, 1});
  const auto split = std::vector<pcg::ParallelShape>{rows, pcg::ParallelShape::partitioned({128, 128}, {}, 1, 8)};
  const auto whole_shapes = std::vector<pcg::ParallelShape>{whole({512, 128}), whole({128, 128})};
  const auto piece = measurer.measure(task("matmul", split));
  const auto all = measurer.measure(task("matmul", whole_shapes));
  ASSERT_TRUE(piece && all);
  EXPECT_LT(piece->forward_seconds, all->forward_seconds / 2);
}

TEST(TaskMeasurement, LookupIdsAreRowsOfTheirTableAndTakeNoGradient) {
  LocalTaskMeasurer measurer(library());
  const auto shapes = std::vector<pcg::ParallelShape>{whole({64}), whole({1000, 32})};
  const auto lookup = measurer.measure(task("embedding", shapes));
  ASSERT_TRUE(lookup);
  EXPECT_GT(lookup->forward_seconds, 0);
  EXPECT_TRUE(lookup->backward_seconds.has_value());  // the table's gradient
}

TEST(TaskMeasurement, PiecesAnOperatorDoesNotAcceptWholeAreNotMeasured) {
  LocalTaskMeasurer measurer(library());
  // Rows of square scores cut in two: a [2, 4, 8] piece is not a causal_mask input.
  const auto shapes = std::vector<pcg::ParallelShape>{pcg::ParallelShape::partitioned({2, 8, 8}, {1, 2, 1})};
  EXPECT_FALSE(measurer.measure(task("causal_mask", shapes)).has_value());
}

TEST(TaskMeasurement, AnOperatorWrittenInTheSpecLanguageIsMeasuredCompiledOrInterpreted) {
  const std::string dir = (std::filesystem::temp_directory_path() / ("loom-measured-specs-" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/softsign.loom") << "op softsign(x: [*s]) -> [*s] { out[*i] = x[*i] / (1 + abs(x[*i])); }\n";
  const spec::Library lib = spec::Library::load({spec::Library::default_specs_dir(), dir});
  const auto shapes = std::vector<pcg::ParallelShape>{whole({64, 256})};
  LocalTaskMeasurer compiled(lib);
  TaskMeasurementSettings interpreting;
  interpreting.compile_from_specs = false;
  LocalTaskMeasurer interpreted(lib, interpreting);
  const auto fast = compiled.measure(task("softsign", shapes));
  const auto slow = interpreted.measure(task("softsign", shapes));
  ASSERT_TRUE(fast && slow);
  // The interpreter walks the comprehension's tree per element: many times slower.
  EXPECT_GT(slow->forward_seconds, 5 * fast->forward_seconds);
  std::filesystem::remove_all(dir);
}

pcg::ParallelShape split(std::vector<std::int64_t> dims, std::vector<std::int64_t> degrees, std::int64_t replicas = 1) {
  return pcg::ParallelShape::partitioned(std::move(dims), std::move(degrees), 1, replicas);
}

TEST(TaskMeasurement, AWeightsReplicasHandTheirGradientsBackTheMoreTheLargerTheWeight) {
  LocalTaskMeasurer measurer(library());
  const auto replicas = [&](std::int64_t side) {
    return measurer.measure_layout_change(
        {"replicate", {{"degree", 2}}, whole({side, side}), split({side, side}, {1, 1}, 2), /*from_input=*/true, /*gradient=*/true});
  };
  const auto small = replicas(4), large = replicas(512);
  ASSERT_TRUE(small && large);
  EXPECT_GE(small->samples, 3);
  EXPECT_GT(small->forward_seconds, 0);
  ASSERT_TRUE(small->backward_seconds && large->backward_seconds);
  // Each replica's gradient is added into the weight's: 16 elements against 262,144.
  EXPECT_GT(*large->backward_seconds, 10 * *small->backward_seconds);
}

TEST(TaskMeasurement, AChangeOfAnOperatorsPiecesMovesTheirElements) {
  LocalTaskMeasurer measurer(library());
  // Rows split in two, gathered whole again; no gradient back, then one.
  const auto gathered = [&](std::int64_t rows, bool gradient) {
    return measurer.measure_layout_change(
        {"combine", {{"dim", 0}, {"degree", 2}}, split({rows, 256}, {2, 1}), whole({rows, 256}), /*from_input=*/false, gradient});
  };
  const auto small = gathered(8, false), large = gathered(2048, false), back = gathered(8, true);
  ASSERT_TRUE(small && large && back);
  EXPECT_FALSE(small->backward_seconds.has_value());
  EXPECT_GT(large->forward_seconds, 10 * small->forward_seconds);
  ASSERT_TRUE(back->backward_seconds.has_value());
  EXPECT_GT(*back->backward_seconds, 0);
}

TEST(TaskMeasurement, ALayoutChangeItCannotBuildIsNotMeasured) {
  LocalTaskMeasurer measurer(library());
  const auto refused = [&](search::LayoutChangeTask change) { return !measurer.measure_layout_change(change).has_value(); };
  // Partial sums: no form makes them out of a graph input.
  EXPECT_TRUE(refused({"reduce", {{"degree", 2}}, pcg::ParallelShape::partitioned({8, 8}, {1, 1}, 2, 1), whole({8, 8}), false, true}));
  // A whole value other than a graph input.
  EXPECT_TRUE(refused({"replicate", {{"degree", 2}}, whole({8, 8}), split({8, 8}, {1, 1}, 2), false, true}));
  // A graph input is whole: no piece of it is a change's source.
  EXPECT_TRUE(refused({"combine", {{"dim", 0}, {"degree", 2}}, split({8, 8}, {2, 1}), whole({8, 8}), true, false}));
  // The form does not make the shape the key says.
  EXPECT_TRUE(refused({"replicate", {{"degree", 4}}, whole({8, 8}), split({8, 8}, {1, 1}, 2), true, true}));
}

}  // namespace
}  // namespace loom::runtime
