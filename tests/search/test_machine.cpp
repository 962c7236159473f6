#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../pcg/error_text.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/search/machine.hpp"

namespace loom::search {
namespace {

std::string error_of(const nlohmann::json& j) {
  return pcg::test_support::error_of([&] { machine_from_json(j); });
}

TEST(Machine, BundledSummitHasSixV100sOverTwoSockets) {
  const Machine m = load_machine("summit");
  EXPECT_EQ(m.device.kind, "V100");
  EXPECT_EQ(m.devices_per_node(), 6);
  EXPECT_EQ(m.level_between(0, 2), LinkLevel::IntraSocket);
  EXPECT_EQ(m.level_between(2, 3), LinkLevel::InterSocket);
  const Machine four = m.with_nodes(4);
  EXPECT_EQ(four.devices(), 24);
  EXPECT_EQ(four.level_between(5, 6), LinkLevel::InterNode);
  EXPECT_EQ(four.level_between(6, 8), LinkLevel::IntraSocket);
  EXPECT_GT(four.link_between(0, 1).bandwidth, four.link_between(0, 6).bandwidth);
  // 1 MB over EDR: latency plus bytes over bandwidth.
  EXPECT_DOUBLE_EQ(four.inter_node.transfer_seconds(1e6), four.inter_node.latency + 1e6 / four.inter_node.bandwidth);
}

TEST(Machine, EveryBundledMachineLoadsAndRoundTrips) {
  for (const char* name : {"summit", "p100", "k80", "dgx_h100"}) {
    SCOPED_TRACE(name);
    const Machine m = load_machine(name);
    EXPECT_EQ(m.name, name);
    EXPECT_GT(m.device.peak_flops, 1e12);
    const Machine back = machine_from_json(machine_to_json(m));
    EXPECT_EQ(back.devices(), m.devices());
    EXPECT_DOUBLE_EQ(back.device.memory_bytes, m.device.memory_bytes);
    EXPECT_DOUBLE_EQ(back.inter_node.bandwidth, m.inter_node.bandwidth);
  }
}

TEST(Machine, TheCalibratedHostKeepsItsDispatchOverhead) {
  const Machine host = load_machine("cpu_host");
  EXPECT_GT(host.device.dispatch_overhead, 0);
  EXPECT_DOUBLE_EQ(machine_from_json(machine_to_json(host)).device.dispatch_overhead, host.device.dispatch_overhead);
  EXPECT_EQ(load_machine("summit").device.dispatch_overhead, 0);  // optional: absent means none
}

TEST(Machine, TheCalibratedHostSumsAndWaitsAsMeasured) {
  const Machine host = load_machine("cpu_host");
  EXPECT_FALSE(host.device.overlaps_communication);
  EXPECT_TRUE(host.intra_socket.allreduce.measured());
  EXPECT_TRUE(host.intra_socket.started_allreduce.measured());
  const Machine back = machine_from_json(machine_to_json(host));
  EXPECT_FALSE(back.device.overlaps_communication);
  EXPECT_DOUBLE_EQ(back.intra_socket.allreduce.bandwidth, host.intra_socket.allreduce.bandwidth);
  EXPECT_DOUBLE_EQ(back.intra_socket.allreduce.latency, host.intra_socket.allreduce.latency);
  EXPECT_DOUBLE_EQ(back.intra_socket.started_allreduce.bandwidth, host.intra_socket.started_allreduce.bandwidth);
  EXPECT_DOUBLE_EQ(back.intra_socket.started_allreduce.latency, host.intra_socket.started_allreduce.latency);
  // Its messages and waited sums carry their times size by size, from a float to 4 MiB, and a
  // message of a few KiB takes longer than its line says: its transport's handshake. (Figures of
  // the bundled file: a file calibrated again keeps the sizes, and the handshake.)
  EXPECT_EQ(host.intra_socket.messages.points().size(), 6u);
  EXPECT_EQ(host.intra_socket.allreduce.steps.points().size(), 6u);
  EXPECT_GT(host.intra_socket.transfer_seconds(4096), 1.5 * (host.intra_socket.latency + 4096 / host.intra_socket.bandwidth));
  EXPECT_EQ(back.intra_socket.messages.points().size(), 6u);
  // Optional: a GPU machine overlaps, and its sums run at its links' point-to-point figures.
  const Machine p100 = load_machine("p100");
  EXPECT_TRUE(p100.device.overlaps_communication);
  EXPECT_FALSE(p100.intra_socket.allreduce.measured());
  EXPECT_FALSE(p100.intra_socket.started_allreduce.measured());
  EXPECT_FALSE(machine_to_json(p100)["links"]["intra_socket"].contains("allreduce_gbps"));
  EXPECT_FALSE(machine_to_json(p100)["links"]["intra_socket"].contains("started_allreduce_gbps"));
}

TEST(Link, RingAllreduceUsesTheMeasuredSumWhereThereIsOne) {
  Link link{10e9, 2e-6};
  // Four devices: 6 steps, each device sending 3/4 of 8 MB twice.
  EXPECT_DOUBLE_EQ(link.ring_allreduce_seconds(8e6, 4), 6 * 2e-6 + 1.5 * 8e6 / 10e9);
  EXPECT_DOUBLE_EQ(link.started_ring_allreduce_seconds(8e6, 4), link.ring_allreduce_seconds(8e6, 4));
  link.allreduce = {4e9, 5e-6};
  EXPECT_DOUBLE_EQ(link.ring_allreduce_seconds(8e6, 4), 6 * 5e-6 + 1.5 * 8e6 / 4e9);
  EXPECT_DOUBLE_EQ(link.ring_allreduce_seconds(8e6, 2), 2 * 5e-6 + 8e6 / 4e9);
  EXPECT_EQ(link.ring_allreduce_seconds(8e6, 1), 0);
  EXPECT_EQ(link.ring_allreduce_seconds(0, 4), 0);
  // A started sum runs as a sum the devices wait in until it is measured apart.
  EXPECT_DOUBLE_EQ(link.started_ring_allreduce_seconds(8e6, 4), link.ring_allreduce_seconds(8e6, 4));
  link.started_allreduce = {6e9, 1e-7};
  EXPECT_DOUBLE_EQ(link.started_ring_allreduce_seconds(8e6, 4), 6 * 1e-7 + 1.5 * 8e6 / 6e9);
  EXPECT_DOUBLE_EQ(link.ring_allreduce_seconds(8e6, 4), 6 * 5e-6 + 1.5 * 8e6 / 4e9);
}

TEST(Machine, TheRooflineFractionsAndTheBusyNodeSlowdownRoundTrip) {
  Machine m = load_machine("p100");
  for (pcg::KernelShape shape : pcg::kKernelShapes) EXPECT_EQ(m.device.achieved(shape), 1) << pcg::kernel_shape_name(shape);
  EXPECT_FALSE(machine_to_json(m)["device"].contains("achieved_fraction"));  // uncalibrated
  m.device.achieved_fraction[static_cast<std::size_t>(pcg::KernelShape::Convolution)] = 0.3;
  const Machine back = machine_from_json(machine_to_json(m));
  EXPECT_DOUBLE_EQ(back.device.achieved(pcg::KernelShape::Convolution), 0.3);
  EXPECT_DOUBLE_EQ(back.device.achieved(pcg::KernelShape::Contraction), 1);
  EXPECT_EQ(back.device.busy_node_slowdown, 1);
  m.device.busy_node_slowdown = 1.2;
  EXPECT_DOUBLE_EQ(machine_from_json(machine_to_json(m)).device.busy_node_slowdown, 1.2);
  EXPECT_FALSE(machine_to_json(m)["device"].contains("unfolding_gbps"));  // kernels that do not unfold
  m.device.unfolding_bandwidth = 4.5e9;
  EXPECT_DOUBLE_EQ(machine_from_json(machine_to_json(m)).device.unfolding_bandwidth, 4.5e9);
  EXPECT_FALSE(machine_to_json(m)["device"].contains("drift"));  // devices that keep their pace
  m.device.drift = 0.015;
  EXPECT_DOUBLE_EQ(machine_from_json(machine_to_json(m)).device.drift, 0.015);
  // The calibrated host carries its fractions, each below 1 for shapes slower than the roofline,
  // and the slowdown of its ranks computing side by side.
  const Machine host = load_machine("cpu_host");
  EXPECT_GT(host.device.busy_node_slowdown, 1);
  EXPECT_GT(host.device.unfolding_bandwidth, 0);  // its convolutions unfold their windows
  EXPECT_GT(host.device.drift, 0);                // its ranks' pace varies
  EXPECT_EQ(load_machine("summit").device.unfolding_bandwidth, 0);
  for (pcg::KernelShape shape : pcg::kKernelShapes) {
    EXPECT_GT(host.device.achieved(shape), 0) << pcg::kernel_shape_name(shape);
    EXPECT_LT(host.device.achieved(shape), 1) << pcg::kernel_shape_name(shape);
  }
}

TEST(Machine, DevicesPerNodeSpreadOverSockets) {
  const Machine m = load_machine("summit");
  const Machine four = m.with_devices_per_node(4);
  EXPECT_EQ(four.sockets_per_node, 2);
  EXPECT_EQ(four.devices_per_socket, 2);
  EXPECT_EQ(m.with_devices_per_node(1).devices(), 1);
  EXPECT_THROW(m.with_devices_per_node(5), LoomError);
  EXPECT_THROW(m.with_nodes(0), LoomError);
}

TEST(Machine, ErrorsNameTheFieldAndFile) {
  nlohmann::json j = machine_to_json(load_machine("p100"));
  nlohmann::json bad = j;
  bad["device"]["peak_tflops"] = -1;
  EXPECT_NE(error_of(bad).find("device.peak_tflops: expected a positive number"), std::string::npos) << error_of(bad);
  bad = j;
  bad["links"].erase("inter_node");
  EXPECT_NE(error_of(bad).find("links: missing \"inter_node\""), std::string::npos) << error_of(bad);
  bad = j;
  bad["links"]["intra_socket"]["allreduce_gbps"] = 2;
  EXPECT_NE(error_of(bad).find("links.intra_socket: allreduce_gbps and allreduce_latency_us go together"), std::string::npos)
      << error_of(bad);
  bad = j;
  bad["links"]["intra_socket"]["started_allreduce_latency_us"] = 0.1;
  EXPECT_NE(error_of(bad).find("links.intra_socket: started_allreduce_gbps and started_allreduce_latency_us go together"),
            std::string::npos)
      << error_of(bad);
  bad = j;
  bad["device"]["overlaps_communication"] = "no";
  EXPECT_NE(error_of(bad).find("device.overlaps_communication: expected true or false"), std::string::npos) << error_of(bad);
  bad = j;
  bad["device"]["achieved_fraction"] = {{"gemm", 0.5}};
  EXPECT_NE(error_of(bad).find("device.achieved_fraction.gemm: not a kernel shape"), std::string::npos) << error_of(bad);
  bad["device"]["achieved_fraction"] = {{"contraction", 1.5}};
  EXPECT_NE(error_of(bad).find("device.achieved_fraction.contraction: a fraction of the roofline must be at most 1"), std::string::npos)
      << error_of(bad);
  bad["device"]["achieved_fraction"] = {{"reduction", 0}};
  EXPECT_NE(error_of(bad).find("device.achieved_fraction.reduction: expected a positive number"), std::string::npos) << error_of(bad);
  bad = j;
  bad["device"]["busy_node_slowdown"] = 0.9;
  EXPECT_NE(error_of(bad).find("device.busy_node_slowdown: a slowdown is at least 1"), std::string::npos) << error_of(bad);
  bad = j;
  bad["device"]["drift"] = -0.1;
  EXPECT_NE(error_of(bad).find("device.drift: a spread is never negative"), std::string::npos) << error_of(bad);
  bad = j;
  bad["device"]["unfolding_gbps"] = 0;
  EXPECT_NE(error_of(bad).find("device.unfolding_gbps: expected a positive number"), std::string::npos) << error_of(bad);
  bad = j;
  bad["nodes"] = 0;
  EXPECT_NE(error_of(bad).find("nodes: expected a count of at least 1"), std::string::npos) << error_of(bad);
  try {
    load_machine("no_such_machine");
    ADD_FAILURE() << "an unknown machine loaded";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_machine.json: cannot open the machine file (bundled machines:"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom::search
