// Optimizer steps restricted to element ranges, as a process of a distributed run takes them:
// the listed elements move exactly as in a full step, the others (and their moments) not at all.
#include <gtest/gtest.h>

#include "loom/runtime/optimizer.hpp"

namespace loom::runtime {
namespace {

NamedTensors<double> ramp(const std::string& name, std::size_t n, double scale) {
  Tensor<double> t({static_cast<std::int64_t>(n)}, 0.0);
  for (std::size_t i = 0; i < n; ++i) t.data[i] = scale * (static_cast<double>(i) - 3.5);
  return {{name, t}};
}

void expect_ranges_follow_a_full_step(OptimizerKind kind) {
  const OptimizerSettings settings{kind, 0.05};
  NamedTensors<double> full = ramp("w", 10, 0.3), partial = full, other = ramp("v", 4, 1.0);
  partial.insert(other.begin(), other.end());
  NamedTensors<double> grads = ramp("w", 10, -0.7);
  grads.emplace("v", ramp("v", 4, 2.0).at("v"));
  Optimizer<double> whole(settings), ranged(settings);
  const ElementRanges only{{"w", {{1, 3}, {6, 9}}}};  // nothing listed for v: not updated
  for (int step = 0; step < 3; ++step) {
    whole.step(full, {{"w", grads.at("w")}});
    ranged.step(partial, grads, &only);
  }
  const NamedTensors<double> start = ramp("w", 10, 0.3);
  for (std::size_t i = 0; i < 10; ++i) {
    const bool listed = (i >= 1 && i < 3) || (i >= 6 && i < 9);
    EXPECT_DOUBLE_EQ(partial.at("w").data[i], listed ? full.at("w").data[i] : start.at("w").data[i]) << "w[" << i << "]";
    if (listed) {
      EXPECT_NE(partial.at("w").data[i], start.at("w").data[i]) << "w[" << i << "] did not move";
    }
  }
  EXPECT_EQ(partial.at("v").data, other.at("v").data);
  if (kind == OptimizerKind::Adam) {
    EXPECT_EQ(ranged.state().first_moment.at("w").data[0], 0.0);
    EXPECT_EQ(ranged.state().first_moment.at("w").data[7], whole.state().first_moment.at("w").data[7]);
  }
}

TEST(Optimizer, SgdInRangesFollowsAFullStepThere) { expect_ranges_follow_a_full_step(OptimizerKind::Sgd); }
TEST(Optimizer, AdamInRangesFollowsAFullStepThere) { expect_ranges_follow_a_full_step(OptimizerKind::Adam); }

// Each parameter's update is timed where some of its elements are updated here.
TEST(Optimizer, TimesTheUpdateOfEachParameterItUpdates) {
  NamedTensors<double> params = ramp("w", 4096, 0.3);
  params.emplace("v", ramp("v", 4, 1.0).at("v"));
  NamedTensors<double> grads = ramp("w", 4096, -0.7);
  grads.emplace("v", ramp("v", 4, 2.0).at("v"));
  Optimizer<double> optimizer({OptimizerKind::Sgd, 0.05});
  const ElementRanges only{{"w", {{0, 2048}}}};  // nothing listed for v
  std::map<std::string, double> seconds;
  optimizer.step(params, grads, &only, &seconds);
  ASSERT_EQ(seconds.size(), 1u);
  EXPECT_GT(seconds.at("w"), 0);
  const double once = seconds.at("w");
  optimizer.step(params, grads, &only, &seconds);
  EXPECT_GT(seconds.at("w"), once) << "a second step adds its time";
  std::map<std::string, double> everything;
  optimizer.step(params, grads, nullptr, &everything);
  EXPECT_EQ(everything.size(), 2u);
}

}  // namespace
}  // namespace loom::runtime
