#pragma once
// Simulates a task graph: each task starts when its dependencies have finished and its resource
// (device or directed link) is free, resources serving tasks in the order they became ready. A
// join holds no resource: it finishes when its dependencies have. Where the graph's devices drift
// apart (TaskGraph::drift), a task whose device meets others (SimTask::meets) also lasts as long as
// they are expected to wait for each other beyond their mean times (meeting_wait.hpp).
#include <vector>

#include "loom/search/task_graph.hpp"

namespace loom::search {

struct Timeline {
  std::vector<double> start, finish;  // per task
  double makespan = 0;                // the iteration time

  // Seconds each device computes (compute tasks only, without what a task that meets other
  // devices waits for them), indexed by device.
  std::vector<double> busy_seconds(const TaskGraph& graph) const;
};

Timeline simulate(const TaskGraph& graph);

// Delta simulation: `graph` equals the graph `previous` was simulated on except for the durations
// of the tasks listed in `changed`. Everything scheduled before the first of them could start is
// kept; only the rest is simulated again. Gives the same timeline as simulate(graph) (a graph
// whose devices drift apart is simulated whole).
Timeline simulate_delta(const TaskGraph& graph, const Timeline& previous, const std::vector<int>& changed);

}  // namespace loom::search
