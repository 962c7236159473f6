#pragma once
// The machine a plan runs on: nodes of sockets of identical devices, and the links between them
// (FlexFlow's device topology, as Unity's evaluation uses it). Loaded from specs/machines/*.json.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include <nlohmann/json_fwd.hpp>

#include "loom/pcg/kernel_shape.hpp"
#include "loom/search/transfer_table.hpp"

namespace loom::search {

// The machine file's "format" and "version".
inline constexpr const char* kMachineFormat = "loom-machine";
inline constexpr int kMachineFormatVersion = 1;

// The bytes of one tensor element as the simulator counts them: a float.
inline constexpr double kBytesPerElement = 4;

struct DeviceSpec {
  std::string kind;             // e.g. "V100"
  double peak_flops = 0;        // per second
  double memory_bandwidth = 0;  // bytes per second
  double memory_bytes = 0;      // capacity
  double kernel_overhead = 0;   // seconds added to every task (launch cost)
  // Seconds the runtime spends on each task outside its kernel (placing the call, making its
  // outputs), added to measured kernel times as well as to the roofline.
  double dispatch_overhead = 0;
  // Whether a device computes while its messages and collectives are under way (a GPU with its
  // own communication streams), or waits in them (a process that sends and receives in line, as
  // the runtime's CPU ranks do).
  bool overlaps_communication = true;
  // Per kernel shape (pcg::KernelShape), the fraction of the roofline (peak FLOP/s or bandwidth,
  // whichever bounds the task) such kernels achieve on the device: 1 where not calibrated.
  std::array<double, pcg::kKernelShapes.size()> achieved_fraction = pcg::per_kernel_shape(1.0);

  // How many times longer a device's kernels take when every device of its node computes at once
  // than when it runs alone (cores, caches and memory bandwidth shared): figures measured alone
  // (ProfileEntry::alone) and the roofline, whose peak and fractions are measured alone, are
  // multiplied by it where a node has several devices. 1 where not calibrated.
  double busy_node_slowdown = 1;

  // Bytes per second at which the device's convolution kernels unfold windows into a matrix
  // before multiplying it (im2col), and fold the gradient back, where they do
  // (pcg::TaskCost::unfolded_elements); 0 where kernels read windows in place (cuDNN's implicit
  // products). Charged beside the roofline, not within its achieved fraction.
  double unfolding_bandwidth = 0;

  // How far devices that work apart drift from where their mean times put them: the standard
  // deviation of a device's time for the work it does between two meetings with other devices
  // (the loss, or a message, collective or sum it waits in; SimTask::meets), as a fraction of that
  // work's mean time. A meeting then lasts as long as the latest device's arrival is expected to
  // be (search/meeting_wait.hpp), not only as the latest mean: on a shared host the other
  // processes, interrupts and caches make a device's pace vary. 0 where not calibrated.
  double drift = 0;

  double achieved(pcg::KernelShape shape) const { return achieved_fraction[static_cast<std::size_t>(shape)]; }
};

// The measured rate of one kind of sum among devices, as the steps of a ring: bytes each device
// sends per second, and seconds per step. A bandwidth of 0: not measured. Where `steps` holds
// the seconds a step took at measured sizes (the bytes each device sends in it), a step is priced
// from them (TransferTable::seconds), and by the rate and latency alone where it holds none.
struct SumRate {
  SumRate() = default;
  SumRate(double bytes_per_second, double seconds_per_step, TransferTable measured_steps = {})
      : bandwidth(bytes_per_second), latency(seconds_per_step), steps(std::move(measured_steps)) {}

  double bandwidth = 0;
  double latency = 0;
  TransferTable steps;
  bool measured() const { return bandwidth > 0; }
  double step_seconds(double bytes) const { return steps.seconds(bytes, bandwidth, latency); }
};

struct Link {
  Link() = default;
  // A link with its point-to-point figures alone.
  Link(double bytes_per_second, double seconds) : bandwidth(bytes_per_second), latency(seconds) {}

  double bandwidth = 0;  // bytes per second, each direction
  double latency = 0;    // seconds
  // A sum among devices joined by this link, where measured apart from the point-to-point figures
  // (unmeasured: those figures): a collective library pays for its reductions, its own buffers and
  // its synchronisation, so its steps run slower than a plain message.
  SumRate allreduce;
  // A sum the devices start and then overlap with other work, as gradient sums during the backward
  // pass: what it costs each device's own work (unmeasured: as `allreduce`). On devices that wait
  // in their communication it costs less than a sum they wait in: no device waits for the others'
  // steps.
  SumRate started_allreduce;
  // Seconds one message took at measured sizes, where measured: messages are priced from them
  // (TransferTable::seconds), and by `latency` and `bandwidth` alone where none was measured.
  TransferTable messages;

  // Time to move `bytes` over the link.
  double transfer_seconds(double bytes) const { return bytes <= 0 ? 0 : messages.seconds(bytes, bandwidth, latency); }
  // Time for `devices` devices to sum a buffer of `bytes` as a ring: 2(k-1) steps (reduce-scatter,
  // then all-gather), in which each device sends 2(k-1)/k of the buffer.
  double ring_allreduce_seconds(double bytes, int devices) const;
  // The same for a started sum.
  double started_ring_allreduce_seconds(double bytes, int devices) const;

 private:
  double ring_seconds(double bytes, int devices, const SumRate& rate) const;
};

enum class LinkLevel { SameDevice, IntraSocket, InterSocket, InterNode };

// How a machine's devices reach other nodes: each node has `per_node` network ports, each with the
// inter_node link's figures, shared by the node's devices; device i of a node uses port
// i * per_node / devices_per_node (the ports nearest it). A port sends one message at a time and
// receives one at a time, so the messages through it take turns.
struct NetworkPorts {
  int devices_per_node = 0;  // 0: one node, nothing crosses between nodes
  int per_node = 1;

  bool between_nodes(int a, int b) const { return devices_per_node > 0 && a / devices_per_node != b / devices_per_node; }
  // The port device `device` sends and receives through, numbered across the machine.
  int port_of(int device) const {
    if (devices_per_node <= 0) return 0;
    const int ports = std::clamp(per_node, 1, devices_per_node);
    return device / devices_per_node * ports + device % devices_per_node * ports / devices_per_node;
  }
};

struct Machine {
  std::string name;
  int nodes = 1;
  int sockets_per_node = 1;
  int devices_per_socket = 1;
  DeviceSpec device;
  Link intra_socket, inter_socket, inter_node;
  int network_ports_per_node = 1;  // of the inter_node link's figures each (NetworkPorts)

  int devices_per_node() const { return sockets_per_node * devices_per_socket; }
  int devices() const { return nodes * devices_per_node(); }
  int node_of(int device) const { return device / devices_per_node(); }
  int socket_of(int device) const { return device / devices_per_socket; }  // global socket index
  LinkLevel level_between(int a, int b) const;
  // The link data crosses between two devices (the slowest one on the way).
  const Link& link_between(int a, int b) const;
  NetworkPorts network_ports() const { return {nodes > 1 ? devices_per_node() : 0, network_ports_per_node}; }

  // The same machine with another node count, or another device count per node (spread evenly
  // over the sockets). Throws LoomError when the counts do not fit.
  Machine with_nodes(int count) const;
  Machine with_devices_per_node(int count) const;
};

std::string level_name(LinkLevel level);

// File form: {"format": "loom-machine", "version": 1, "name", "nodes", "sockets_per_node",
//   "devices_per_socket", "network_ports_per_node"? (default 1), "device": {"kind", "peak_tflops", "memory_gbps", "memory_gib",
//   "kernel_overhead_us"?, "dispatch_overhead_us"?, "overlaps_communication"? (default true),
//   "achieved_fraction"?: {SHAPE: fraction, ...} (pcg::kernel_shape_name), "busy_node_slowdown"?,
//   "unfolding_gbps"?, "drift"? (DeviceSpec::drift)},
//   "links": {"intra_socket" | "inter_socket" |
//   "inter_node":
//   {"gbps", "latency_us", "allreduce_gbps"?, "allreduce_latency_us"?, "started_allreduce_gbps"?,
//   "started_allreduce_latency_us"?}}} (each pair of sum figures together or neither). Throws
//   LoomError naming the JSON path of a problem.
Machine machine_from_json(const nlohmann::json& json);
nlohmann::json machine_to_json(const Machine& machine);

// A bundled machine by name (specs/machines/NAME.json) or a path to a machine file; errors name
// the file.
Machine load_machine(const std::string& name_or_path);
// The file load_machine reads for `name_or_path`.
std::string machine_file_path(const std::string& name_or_path);
// Names of the bundled machines.
std::string machines_dir();

}  // namespace loom::search
