#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "error_text.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/machine_view.hpp"

namespace loom::pcg {
namespace {

using nlohmann::json;
using test_support::contains;
using test_support::error_of;

TEST(MachineView, ContiguousNumbersDevicesFromTheFirst) {
  EXPECT_EQ(MachineView::contiguous(2, 3).devices, (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(MachineView::contiguous(5, 0).tasks(), 0u);
}

TEST(MachineView, ContiguousRejectsImpossibleViews) {
  EXPECT_THROW(MachineView::contiguous(-1, 2), LoomError);
  EXPECT_THROW(MachineView::contiguous(0, -3), LoomError);
  EXPECT_THROW(MachineView::contiguous(std::numeric_limits<int>::max(), 2), LoomError);
}

TEST(MachineView, EqualityComparesDevices) {
  EXPECT_EQ(MachineView::contiguous(0, 2), (MachineView{{0, 1}}));
  EXPECT_NE(MachineView::contiguous(0, 2), (MachineView{{1, 0}}));
}

TEST(MachineView, ToStringCompressesRuns) {
  EXPECT_EQ(MachineView::contiguous(0, 4).to_string(), "0-3");
  EXPECT_EQ((MachineView{{0, 2, 4, 5, 7}}).to_string(), "0,2,4-5,7");
  EXPECT_EQ((MachineView{{3, 3}}).to_string(), "3,3");
  EXPECT_EQ(MachineView{}.to_string(), "");
}

TEST(MachineView, JsonRoundTrips) {
  const MachineView view{{4, 0, 7}};
  const json j = view;
  EXPECT_EQ(j, json::parse(R"({"devices":[4,0,7]})"));
  EXPECT_EQ(j.get<MachineView>(), view);
}

TEST(MachineView, FromJsonRejectsBadDevices) {
  EXPECT_THROW(json::parse(R"({"devices":[0,-1]})").get<MachineView>(), LoomError);
  EXPECT_THROW(json::parse(R"({"devices":[0,"a"]})").get<MachineView>(), LoomError);
  EXPECT_THROW(json::parse(R"({"devices":3})").get<MachineView>(), LoomError);
  EXPECT_THROW(json::parse(R"([0,1])").get<MachineView>(), LoomError);
  EXPECT_THROW(json::parse(R"({"devices":[0],"extra":1})").get<MachineView>(), LoomError);
  const std::string message = error_of([] { json::parse(R"({"devices":[0,-1]})").get<MachineView>(); });
  EXPECT_TRUE(contains(message, "'devices[1]' must be a non-negative device id"));
}

}  // namespace
}  // namespace loom::pcg
