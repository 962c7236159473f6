#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/simulator.hpp"
#include "loom/search/trace_file.hpp"

namespace loom::search {
namespace {

SimTask task(TaskKind kind, int device, double seconds, std::vector<int> deps, std::string label) {
  SimTask t;
  t.kind = kind;
  t.device = device;
  t.peer = kind == TaskKind::Communication ? 1 - device : -1;
  t.seconds = seconds;
  t.deps = std::move(deps);
  t.label = std::move(label);
  t.node = 4;
  return t;
}

TaskGraph two_devices() {
  TaskGraph g;
  g.devices = 2;
  g.tasks = {task(TaskKind::Compute, 0, 2e-6, {}, "matmul#4[0]"), task(TaskKind::Communication, 0, 3e-6, {0}, "matmul#4[0] 0->1"),
             task(TaskKind::Join, 0, 0, {1}, "joined"), task(TaskKind::Compute, 1, 1e-6, {2}, "relu#5[1]")};
  g.tasks[3].backward = true;
  return g;
}

TEST(TraceFile, SimulatedSpansAreTheTimelinesTasksOnTheirDevicesLanes) {
  const TaskGraph g = two_devices();
  const Timeline t = simulate(g);
  const std::vector<TraceSpan> spans = simulated_spans(g, t);
  ASSERT_EQ(spans.size(), 3u);  // the join takes no time and has no span
  EXPECT_EQ(spans[0].name, "matmul#4[0]");
  EXPECT_EQ(spans[0].lane, TraceLane::Compute);
  EXPECT_EQ(spans[0].kind, "forward");
  EXPECT_EQ(spans[1].lane, TraceLane::Communication);
  EXPECT_EQ(spans[1].kind, "communication");
  EXPECT_EQ(spans[1].device, 0);
  EXPECT_EQ(spans[2].device, 1);
  EXPECT_EQ(spans[2].kind, "backward");
  const std::size_t of_task[] = {0, 1, 3};
  for (std::size_t i = 0; i < spans.size(); ++i) {
    EXPECT_DOUBLE_EQ(spans[i].start, t.start[of_task[i]]);
    EXPECT_DOUBLE_EQ(spans[i].seconds, t.finish[of_task[i]] - t.start[of_task[i]]);
    EXPECT_EQ(spans[i].node, pcg::NodeId(4));
  }
  // The relu waits for the message: it starts when the message ends.
  EXPECT_DOUBLE_EQ(spans[2].start, spans[1].start + spans[1].seconds);
}

TEST(TraceFile, EventsAreCompleteSpansInMicrosecondsWithANamedRowPerDeviceAndLane) {
  const TaskGraph g = two_devices();
  const std::vector<TraceSpan> spans = simulated_spans(g, simulate(g));
  const nlohmann::json doc = trace_events(spans, "a title");
  EXPECT_EQ(doc["otherData"]["title"], "a title");
  std::map<std::pair<int, int>, std::string> lanes;
  std::map<int, std::string> rows;
  std::vector<nlohmann::json> complete;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") rows[e["pid"].get<int>()] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_name") lanes[{e["pid"].get<int>(), e["tid"].get<int>()}] = e["args"]["name"];
    if (e["ph"] == "X") complete.push_back(e);
  }
  EXPECT_EQ(rows, (std::map<int, std::string>{{0, "device 0"}, {1, "device 1"}}));
  EXPECT_EQ(lanes, (std::map<std::pair<int, int>, std::string>{{{0, 0}, "compute"}, {{0, 1}, "communication"}, {{1, 0}, "compute"}}));
  ASSERT_EQ(complete.size(), spans.size());
  for (std::size_t i = 0; i < spans.size(); ++i) {
    EXPECT_EQ(complete[i]["name"], spans[i].name);
    EXPECT_EQ(complete[i]["cat"], spans[i].kind);
    EXPECT_DOUBLE_EQ(complete[i]["ts"].get<double>(), spans[i].start * 1e6);
    EXPECT_DOUBLE_EQ(complete[i]["dur"].get<double>(), spans[i].seconds * 1e6);
    EXPECT_EQ(complete[i]["args"]["node"], 4);
  }
}

TEST(TraceFile, WritingIntoAMissingFolderNamesThePath) {
  const std::string path = (std::filesystem::temp_directory_path() / "loom-no-such-folder" / "trace.json").string();
  try {
    write_trace(path, {}, "t");
    FAIL() << "wrote into a missing folder";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("loom-no-such-folder"), std::string::npos) << e.what();
  }
}

TEST(TraceFile, AWrittenTraceReadsBackAsTheDocument) {
  const TaskGraph g = two_devices();
  const std::vector<TraceSpan> spans = simulated_spans(g, simulate(g));
  const std::string path = (std::filesystem::temp_directory_path() / "loom-trace-file-test.json").string();
  write_trace(path, spans, "written");
  std::ifstream in(path);
  EXPECT_EQ(nlohmann::json::parse(in), trace_events(spans, "written"));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace loom::search
