#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../pcg/error_text.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/transfer_table.hpp"

namespace loom::search {
namespace {

// A transport that sends up to 1 KiB at once (1 us), and larger messages after a handshake.
TransferTable eager_then_handshake() { return TransferTable({{4, 1e-6}, {1024, 1.2e-6}, {4096, 4e-6}, {65536, 10e-6}}); }

TEST(TransferTable, PricesMeasuredSizesAsMeasuredAndOnTheLineBetweenThem) {
  const TransferTable t = eager_then_handshake();
  const double bandwidth = 10e9, latency = 0.5e-6;
  EXPECT_DOUBLE_EQ(t.seconds(1024, bandwidth, latency), 1.2e-6);
  EXPECT_DOUBLE_EQ(t.seconds(4096, bandwidth, latency), 4e-6);
  EXPECT_DOUBLE_EQ(t.seconds(2560, bandwidth, latency), 2.6e-6);  // half way from 1 KiB to 4 KiB
  EXPECT_DOUBLE_EQ(t.seconds(34816, bandwidth, latency), 7e-6);   // half way from 4 KiB to 64 KiB
  // Below the smallest size: the fitted line, never more than the smallest took; at it, its time.
  EXPECT_DOUBLE_EQ(t.seconds(2, bandwidth, latency), latency + 2 / bandwidth);
  EXPECT_DOUBLE_EQ(t.seconds(2, bandwidth, 5e-6), 1e-6);
  EXPECT_DOUBLE_EQ(t.seconds(4, bandwidth, 0.1e-6), 1e-6);
  // Above the largest: on at the rate between the two largest, 6 us per 61,440 bytes.
  EXPECT_DOUBLE_EQ(t.seconds(65536 + 61440, bandwidth, latency), 16e-6);
  // Where the two largest times do not rise (a spell of other work), beyond them at the bandwidth.
  const TransferTable level({{1000, 2e-6}, {2000, 2e-6}});
  EXPECT_DOUBLE_EQ(level.seconds(4000, 1e9, latency), 4e-6);
  // One size alone goes on at the bandwidth given.
  const TransferTable one({{1000, 2e-6}});
  EXPECT_DOUBLE_EQ(one.seconds(3000, 1e9, latency), 4e-6);
  // No size measured: the line alone.
  EXPECT_DOUBLE_EQ(TransferTable().seconds(1e6, bandwidth, latency), latency + 1e6 / bandwidth);
}

TEST(TransferTable, RefusesSizesOutOfOrderAndNegativeTimes) {
  EXPECT_THROW(TransferTable({{4096, 4e-6}, {1024, 1e-6}}), LoomError);
  EXPECT_THROW(TransferTable({{1024, 4e-6}, {1024, 5e-6}}), LoomError);
  EXPECT_THROW(TransferTable({{0, 1e-6}}), LoomError);
  EXPECT_THROW(TransferTable({{8, -1e-6}}), LoomError);
}

TEST(Link, MessagesAndRingStepsOfMeasuredSizesTakeTheirMeasuredTimes) {
  Link link{10e9, 0.5e-6};
  link.messages = eager_then_handshake();
  EXPECT_DOUBLE_EQ(link.transfer_seconds(4096), 4e-6);  // the line alone would say 0.91 us
  EXPECT_EQ(link.transfer_seconds(0), 0);
  // Sums unmeasured: each ring step is a message of its share, 2 KiB of 8 KiB on four devices.
  EXPECT_DOUBLE_EQ(link.ring_allreduce_seconds(8192, 4), 6 * link.transfer_seconds(2048));
  EXPECT_DOUBLE_EQ(link.transfer_seconds(2048), 1.2e-6 + 2.8e-6 / 3);
  // Measured sums with their steps: two devices summing 8 KiB take two steps of 4 KiB each.
  link.allreduce = SumRate(4e9, 2e-6, TransferTable({{512, 2.5e-6}, {4096, 9e-6}}));
  EXPECT_DOUBLE_EQ(link.ring_allreduce_seconds(8192, 2), 2 * 9e-6);
  EXPECT_DOUBLE_EQ(link.started_ring_allreduce_seconds(8192, 2), 2 * 9e-6);  // as the waited one until measured apart
  link.started_allreduce = SumRate(6e9, 1e-7);                               // no steps measured: its line
  EXPECT_DOUBLE_EQ(link.started_ring_allreduce_seconds(8192, 2), 2 * (1e-7 + 4096 / 6e9));
}

TEST(Machine, LinkTablesRoundTripAndBadOnesAreRefusedByName) {
  Machine m = load_machine("p100");
  m.intra_socket.messages = eager_then_handshake();
  m.intra_socket.allreduce = SumRate(4e9, 2e-6, TransferTable({{512, 2.5e-6}, {4096, 9e-6}}));
  const nlohmann::json j = machine_to_json(m);
  ASSERT_TRUE(j["links"]["intra_socket"].contains("message_table"));
  EXPECT_NEAR(j["links"]["intra_socket"]["message_table"][2][1].get<double>(), 4.0, 1e-9);  // microseconds
  const Machine back = machine_from_json(j);
  ASSERT_EQ(back.intra_socket.messages.points().size(), 4u);
  EXPECT_NEAR(back.intra_socket.transfer_seconds(2560), m.intra_socket.transfer_seconds(2560), 1e-15);
  EXPECT_NEAR(back.intra_socket.ring_allreduce_seconds(8192, 2), 2 * 9e-6, 1e-15);
  EXPECT_TRUE(back.inter_node.messages.empty());
  EXPECT_FALSE(machine_to_json(load_machine("p100"))["links"]["intra_socket"].contains("message_table"));

  const auto error_of = [](const nlohmann::json& bad) { return pcg::test_support::error_of([&] { machine_from_json(bad); }); };
  nlohmann::json bad = j;
  bad["links"]["intra_socket"]["message_table"][2][0] = 100;
  EXPECT_NE(error_of(bad).find("links.intra_socket.message_table[2][0]: sizes must increase, got 100 bytes after 1024"), std::string::npos)
      << error_of(bad);
  bad = j;
  bad["links"]["intra_socket"]["message_table"][1] = 5;
  EXPECT_NE(error_of(bad).find("links.intra_socket.message_table[1]: expected [bytes, microseconds], got 5"), std::string::npos)
      << error_of(bad);
  bad = j;
  bad["links"]["intra_socket"]["allreduce_step_table"][0][1] = -2;
  EXPECT_NE(error_of(bad).find("links.intra_socket.allreduce_step_table[0][1]: a time is never negative"), std::string::npos)
      << error_of(bad);
  bad = j;
  bad["links"]["intra_socket"]["message_table"] = "fast";
  EXPECT_NE(error_of(bad).find("links.intra_socket.message_table: expected an array"), std::string::npos) << error_of(bad);
  bad = j;
  bad["links"]["inter_node"]["started_allreduce_step_table"] = nlohmann::json::array({nlohmann::json::array({8, 1})});
  EXPECT_NE(error_of(bad).find("links.inter_node.started_allreduce_step_table: a step table prices the sizes measured"), std::string::npos)
      << error_of(bad);
}

}  // namespace
}  // namespace loom::search
