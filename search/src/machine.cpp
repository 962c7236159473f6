#include "loom/search/machine.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/json_read.hpp"

namespace loom::search {

using nlohmann::json;
using namespace pcg::json_read;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A table of [bytes, microseconds] pairs, sizes increasing.
TransferTable read_transfer_table(const json& j, const std::string& path) {
  const json& rows = require_array(j, path);
  std::vector<MeasuredTransfer> points;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string at = indexed(path, i);
    if (!rows[i].is_array() || rows[i].size() != 2) fail(at, "expected [bytes, microseconds], got " + rows[i].dump());
    const MeasuredTransfer p{read_number(rows[i][0], indexed(at, 0), true), read_number(rows[i][1], indexed(at, 1)) * 1e-6};
    if (p.seconds < 0) fail(indexed(at, 1), "a time is never negative, got " + rows[i][1].dump());
    if (!points.empty() && !(p.bytes > points.back().bytes))
      fail(indexed(at, 0), "sizes must increase, got " + rows[i][0].dump() + " bytes after " + rows[i - 1][0].dump());
    points.push_back(p);
  }
  return TransferTable(std::move(points));
}

json transfer_table_json(const TransferTable& table) {
  json rows = json::array();
  for (const MeasuredTransfer& p : table.points()) rows.push_back({p.bytes, p.seconds * 1e6});
  return rows;
}

// The sum figures `<prefix>gbps` and `<prefix>latency_us` of a link, given together or not at all,
// and the steps measured, `<prefix>step_table`, with them.
SumRate read_sum_rate(const json& j, const std::string& path, const std::string& prefix) {
  const std::string gbps = prefix + "gbps", latency_us = prefix + "latency_us", table = prefix + "step_table";
  if (j.contains(gbps) != j.contains(latency_us)) fail(path, gbps + " and " + latency_us + " go together: give both or neither");
  if (!j.contains(gbps)) {
    if (j.contains(table))
      fail(member(path, table), "a step table prices the sizes measured: give " + gbps + " and " + latency_us + " for the others");
    return {};
  }
  SumRate rate{read_number(j.at(gbps), member(path, gbps), true) * 1e9, read_number(j.at(latency_us), member(path, latency_us)) * 1e-6};
  if (j.contains(table)) rate.steps = read_transfer_table(j.at(table), member(path, table));
  return rate;
}

void write_sum_rate(json& out, const std::string& prefix, const SumRate& rate) {
  if (!rate.measured()) return;
  out[prefix + "gbps"] = rate.bandwidth / 1e9;
  out[prefix + "latency_us"] = rate.latency * 1e6;
  if (!rate.steps.empty()) out[prefix + "step_table"] = transfer_table_json(rate.steps);
}

Link read_link(const json& j, const std::string& path) {
  require_object(j, path);
  reject_unknown_keys(j, path,
                      {"gbps", "latency_us", "message_table", "allreduce_gbps", "allreduce_latency_us", "allreduce_step_table",
                       "started_allreduce_gbps", "started_allreduce_latency_us", "started_allreduce_step_table"});
  Link link{read_number(require(j, "gbps", path), member(path, "gbps"), true) * 1e9,
            read_number(require(j, "latency_us", path), member(path, "latency_us")) * 1e-6};
  if (j.contains("message_table")) link.messages = read_transfer_table(j.at("message_table"), member(path, "message_table"));
  link.allreduce = read_sum_rate(j, path, "allreduce_");
  link.started_allreduce = read_sum_rate(j, path, "started_allreduce_");
  return link;
}

json link_json(const Link& l) {
  json out = {{"gbps", l.bandwidth / 1e9}, {"latency_us", l.latency * 1e6}};
  if (!l.messages.empty()) out["message_table"] = transfer_table_json(l.messages);
  write_sum_rate(out, "allreduce_", l.allreduce);
  write_sum_rate(out, "started_allreduce_", l.started_allreduce);
  return out;
}

int read_count(const json& j, const std::string& key) {
  const int v = read_int(require(j, key, ""), key);
  if (v < 1) fail(key, "expected a count of at least 1, got " + std::to_string(v));
  return v;
}

}  // namespace

double Link::ring_seconds(double bytes, int devices, const SumRate& rate) const {
  if (bytes <= 0 || devices < 2) return 0;
  const double k = devices;
  const double step = bytes / k;
  return 2 * (k - 1) * (rate.measured() ? rate.step_seconds(step) : transfer_seconds(step));
}

double Link::ring_allreduce_seconds(double bytes, int devices) const { return ring_seconds(bytes, devices, allreduce); }

double Link::started_ring_allreduce_seconds(double bytes, int devices) const {
  return ring_seconds(bytes, devices, started_allreduce.measured() ? started_allreduce : allreduce);
}

LinkLevel Machine::level_between(int a, int b) const {
  if (a == b) return LinkLevel::SameDevice;
  if (node_of(a) != node_of(b)) return LinkLevel::InterNode;
  return socket_of(a) == socket_of(b) ? LinkLevel::IntraSocket : LinkLevel::InterSocket;
}

const Link& Machine::link_between(int a, int b) const {
  static const Link local{1e18, 0};
  switch (level_between(a, b)) {
    case LinkLevel::SameDevice: return local;
    case LinkLevel::IntraSocket: return intra_socket;
    case LinkLevel::InterSocket: return inter_socket;
    case LinkLevel::InterNode: return inter_node;
  }
  return local;
}

Machine Machine::with_nodes(int count) const {
  if (count < 1) throw LoomError("the node count must be at least 1, got " + std::to_string(count));
  Machine m = *this;
  m.nodes = count;
  return m;
}

Machine Machine::with_devices_per_node(int count) const {
  if (count < 1) throw LoomError("the device count per node must be at least 1, got " + std::to_string(count));
  Machine m = *this;
  m.sockets_per_node = std::min(sockets_per_node, count);
  if (count % m.sockets_per_node != 0)
    throw LoomError(name + " has " + std::to_string(sockets_per_node) + " sockets per node: " + std::to_string(count) +
                    " devices per node cannot be spread evenly over them");
  m.devices_per_socket = count / m.sockets_per_node;
  return m;
}

std::string level_name(LinkLevel level) {
  switch (level) {
    case LinkLevel::SameDevice: return "same device";
    case LinkLevel::IntraSocket: return "intra-socket";
    case LinkLevel::InterSocket: return "inter-socket";
    case LinkLevel::InterNode: return "inter-node";
  }
  return "?";
}

Machine machine_from_json(const json& j) {
  check_format(j, kMachineFormat, kMachineFormatVersion, "Loom machine");
  reject_unknown_keys(j, "",
                      {"format", "version", "name", "description", "nodes", "sockets_per_node", "devices_per_socket",
                       "network_ports_per_node", "device", "links"});
  Machine m;
  m.name = read_string(require(j, "name", ""), "name");
  m.nodes = read_count(j, "nodes");
  m.sockets_per_node = read_count(j, "sockets_per_node");
  m.devices_per_socket = read_count(j, "devices_per_socket");
  if (j.contains("network_ports_per_node")) m.network_ports_per_node = read_count(j, "network_ports_per_node");
  const json& d = require(j, "device", "");
  require_object(d, "device");
  reject_unknown_keys(d, "device",
                      {"kind", "peak_tflops", "memory_gbps", "memory_gib", "kernel_overhead_us", "dispatch_overhead_us",
                       "overlaps_communication", "achieved_fraction", "busy_node_slowdown", "unfolding_gbps", "drift"});
  m.device.kind = read_string(require(d, "kind", "device"), "device.kind");
  m.device.peak_flops = read_number(require(d, "peak_tflops", "device"), "device.peak_tflops", true) * 1e12;
  m.device.memory_bandwidth = read_number(require(d, "memory_gbps", "device"), "device.memory_gbps", true) * 1e9;
  m.device.memory_bytes = read_number(require(d, "memory_gib", "device"), "device.memory_gib", true) * kGiB;
  if (d.contains("kernel_overhead_us"))
    m.device.kernel_overhead = read_number(d.at("kernel_overhead_us"), "device.kernel_overhead_us") * 1e-6;
  if (d.contains("dispatch_overhead_us"))
    m.device.dispatch_overhead = read_number(d.at("dispatch_overhead_us"), "device.dispatch_overhead_us") * 1e-6;
  if (d.contains("overlaps_communication"))
    m.device.overlaps_communication = read_bool(d.at("overlaps_communication"), "device.overlaps_communication");
  if (d.contains("busy_node_slowdown")) {
    m.device.busy_node_slowdown = read_number(d.at("busy_node_slowdown"), "device.busy_node_slowdown", true);
    if (m.device.busy_node_slowdown < 1)
      fail("device.busy_node_slowdown", "a slowdown is at least 1, got " + d.at("busy_node_slowdown").dump());
  }
  if (d.contains("unfolding_gbps")) m.device.unfolding_bandwidth = read_number(d.at("unfolding_gbps"), "device.unfolding_gbps", true) * 1e9;
  if (d.contains("drift")) {
    m.device.drift = read_number(d.at("drift"), "device.drift");
    if (m.device.drift < 0) fail("device.drift", "a spread is never negative, got " + d.at("drift").dump());
  }
  if (d.contains("achieved_fraction")) {
    const json& fractions = d.at("achieved_fraction");
    require_object(fractions, "device.achieved_fraction");
    for (const auto& [name, value] : fractions.items()) {
      const std::optional<pcg::KernelShape> shape = pcg::kernel_shape_from_name(name);
      const std::string path = "device.achieved_fraction." + name;
      if (!shape) fail(path, "not a kernel shape (expected elementwise, transcendental, reduction, contraction or convolution)");
      const double fraction = read_number(value, path, true);
      if (fraction > 1) fail(path, "a fraction of the roofline must be at most 1, got " + value.dump());
      m.device.achieved_fraction[static_cast<std::size_t>(*shape)] = fraction;
    }
  }
  const json& links = require(j, "links", "");
  require_object(links, "links");
  reject_unknown_keys(links, "links", {"intra_socket", "inter_socket", "inter_node"});
  m.intra_socket = read_link(require(links, "intra_socket", "links"), "links.intra_socket");
  m.inter_socket = read_link(require(links, "inter_socket", "links"), "links.inter_socket");
  m.inter_node = read_link(require(links, "inter_node", "links"), "links.inter_node");
  return m;
}

json machine_to_json(const Machine& m) {
  json fractions = json::object();
  for (pcg::KernelShape shape : pcg::kKernelShapes)
    if (m.device.achieved(shape) != 1) fractions[pcg::kernel_shape_name(shape)] = m.device.achieved(shape);
  json out = {{"format", kMachineFormat},
              {"version", kMachineFormatVersion},
              {"name", m.name},
              {"nodes", m.nodes},
              {"sockets_per_node", m.sockets_per_node},
              {"devices_per_socket", m.devices_per_socket},
              {"device",
               {{"kind", m.device.kind},
                {"peak_tflops", m.device.peak_flops / 1e12},
                {"memory_gbps", m.device.memory_bandwidth / 1e9},
                {"memory_gib", m.device.memory_bytes / kGiB},
                {"kernel_overhead_us", m.device.kernel_overhead * 1e6},
                {"dispatch_overhead_us", m.device.dispatch_overhead * 1e6},
                {"overlaps_communication", m.device.overlaps_communication}}},
              {"links",
               {{"intra_socket", link_json(m.intra_socket)},
                {"inter_socket", link_json(m.inter_socket)},
                {"inter_node", link_json(m.inter_node)}}}};
  if (!fractions.empty()) out["device"]["achieved_fraction"] = fractions;
  if (m.device.busy_node_slowdown != 1) out["device"]["busy_node_slowdown"] = m.device.busy_node_slowdown;
  if (m.device.unfolding_bandwidth > 0) out["device"]["unfolding_gbps"] = m.device.unfolding_bandwidth / 1e9;
  if (m.device.drift > 0) out["device"]["drift"] = m.device.drift;
  if (m.network_ports_per_node != 1) out["network_ports_per_node"] = m.network_ports_per_node;
  return out;
}

std::string machines_dir() { return spec::Library::default_specs_dir() + "/machines"; }

namespace {

bool names_a_bundled_machine(const std::string& name_or_path) {
  return name_or_path.find('/') == std::string::npos && std::filesystem::path(name_or_path).extension() != ".json";
}

}  // namespace

std::string machine_file_path(const std::string& name_or_path) {
  if (!names_a_bundled_machine(name_or_path)) return name_or_path;
  return (std::filesystem::path(machines_dir()) / (name_or_path + ".json")).string();
}

Machine load_machine(const std::string& name_or_path) {
  namespace fs = std::filesystem;
  const fs::path path = machine_file_path(name_or_path);
  const bool is_name = names_a_bundled_machine(name_or_path);
  std::ifstream in(path);
  if (!in) {
    std::string known;
    if (is_name && fs::is_directory(machines_dir()))
      for (const auto& e : fs::directory_iterator(machines_dir()))
        if (e.path().extension() == ".json") known += (known.empty() ? "" : ", ") + e.path().stem().string();
    throw LoomError(path.string() + ": cannot open the machine file" + (known.empty() ? "" : " (bundled machines: " + known + ")"));
  }
  try {
    return machine_from_json(json::parse(in));
  } catch (const json::parse_error& e) {
    throw LoomError(path.string() + ": not valid JSON: " + e.what());
  } catch (const LoomError& e) {
    throw LoomError(path.string() + ": " + e.what());
  }
}

}  // namespace loom::search
