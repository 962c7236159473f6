#include "loom/search/trace_file.hpp"

#include <set>

#include "loom/pcg/file_io.hpp"

namespace loom::search {

namespace {

int lane_number(TraceLane lane) { return lane == TraceLane::Compute ? 0 : 1; }
const char* lane_name(TraceLane lane) { return lane == TraceLane::Compute ? "compute" : "communication"; }

nlohmann::json metadata(const char* what, int device, int lane, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", device}, {"tid", lane}, {"args", {{"name", name}}}};
}

}  // namespace

nlohmann::json trace_events(const std::vector<TraceSpan>& spans, const std::string& title, const std::string& row) {
  nlohmann::json events = nlohmann::json::array();
  std::set<std::pair<int, TraceLane>> lanes;
  for (const TraceSpan& s : spans) lanes.emplace(s.device, s.lane);
  std::set<int> devices;
  for (const auto& [device, lane] : lanes) {
    if (devices.insert(device).second) events.push_back(metadata("process_name", device, 0, row + " " + std::to_string(device)));
    events.push_back(metadata("thread_name", device, lane_number(lane), lane_name(lane)));
  }
  for (const TraceSpan& s : spans) {
    nlohmann::json e = {{"ph", "X"},           {"name", s.name},        {"cat", s.kind}, {"pid", s.device}, {"tid", lane_number(s.lane)},
                        {"ts", s.start * 1e6}, {"dur", s.seconds * 1e6}};
    if (s.node.valid()) e["args"] = {{"node", s.node.value()}};
    events.push_back(std::move(e));
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}, {"otherData", {{"title", title}}}};
}

void write_trace(const std::string& path, const std::vector<TraceSpan>& spans, const std::string& title, const std::string& row) {
  pcg::write_file_atomically(path, trace_events(spans, title, row).dump() + "\n");
}

std::vector<TraceSpan> simulated_spans(const TaskGraph& graph, const Timeline& timeline) {
  std::vector<TraceSpan> spans;
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    const SimTask& t = graph.tasks[i];
    if (t.kind == TaskKind::Join) continue;
    TraceSpan s;
    s.device = t.device;
    s.lane = t.kind == TaskKind::Compute ? TraceLane::Compute : TraceLane::Communication;
    s.name = graph.label_of(i);
    s.kind = t.kind == TaskKind::Communication ? "communication" : t.backward ? "backward" : "forward";
    s.start = timeline.start[i];
    s.seconds = timeline.finish[i] - timeline.start[i];
    s.node = t.node;
    spans.push_back(std::move(s));
  }
  return spans;
}

}  // namespace loom::search
