#pragma once
// Timelines in the trace-event JSON that chrome://tracing and Perfetto read: a simulated iteration
// (`loom simulate --trace`) and a measured step (`loom train --trace`) in one format, one process
// row per device and a lane for its compute and one for its communication, so that what the
// simulator expects and what the ranks did can be laid side by side.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/pcg/node_id.hpp"
#include "loom/search/simulator.hpp"

namespace loom::search {

enum class TraceLane { Compute, Communication };

// One span of a device's (or a process's) time, from the start of the iteration.
struct TraceSpan {
  int device = 0;  // the row: a device, or a process
  TraceLane lane = TraceLane::Compute;
  std::string name;  // e.g. "matmul#3[0]", "gradient allreduce 0->1"
  std::string kind;  // e.g. "forward", "backward", "communication", "update"
  double start = 0, seconds = 0;
  pcg::NodeId node = pcg::kNoNode;  // the PCG node the span works for, where there is one
};

// The trace-event document (times in microseconds), `title` in its metadata, each row named
// `row` and its number ("device 3", "process 3").
nlohmann::json trace_events(const std::vector<TraceSpan>& spans, const std::string& title, const std::string& row = "device");
// Writes trace_events() to `path` atomically. Throws LoomError naming the path.
void write_trace(const std::string& path, const std::vector<TraceSpan>& spans, const std::string& title, const std::string& row = "device");

// A simulated iteration's tasks: a compute task on its device's compute lane, a message or ring
// step on its sender's communication lane; joins, which take no time, left out.
std::vector<TraceSpan> simulated_spans(const TaskGraph& graph, const Timeline& timeline);

}  // namespace loom::search
