#pragma once
// What `loom simulate` computes for a plan, kept for drawing: the task graph of one training
// iteration (pipelined plans run their micro-batches 1F1B), its simulated timeline, each device's
// busy time and memory, at its peak and over the iteration. Tasks are costed as `loom simulate` costs them: on a machine of this host's
// device kind, measured where this user's profile database for it has them
// (search::user_profile_path; Studio measures nothing itself), else by the roofline.
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/search/plan.hpp"
#include "loom/search/plan_simulation.hpp"
#include "loom/search/simulator.hpp"
#include "loom/search/task_graph.hpp"

namespace loom::gui {

struct PlanAnalysis {
  search::TaskGraph tasks;
  search::Timeline timeline;
  std::vector<double> busy_seconds;                                // per device
  std::vector<double> memory_bytes;                                // per device
  std::vector<std::vector<search::MemoryPoint>> memory_over_time;  // per device (plan_memory_over_time)
  int overfull_device = -1;                                        // the first device whose memory is exceeded, or -1
};

// Throws LoomError when the plan places a task outside its machine.
PlanAnalysis analyze_plan(const search::Plan& plan, const spec::Library& library);

}  // namespace loom::gui
