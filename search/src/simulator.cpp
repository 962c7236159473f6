#include "loom/search/simulator.hpp"

#include "loom/pcg/diagnostic.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>
#include <unordered_map>

namespace loom::search {
namespace {

// Calls `visit` with each resource the task occupies: its own, then the devices it holds.
template <class Visit>
void for_each_resource(const SimTask& t, int devices, Visit&& visit) {
  visit(t.resource(devices));
  for (int d : t.holds) visit(static_cast<std::int64_t>(d));
}

// The event loop shared by the full and the delta simulation. Tasks marked `kept` already have
// their times in `out`; the rest are scheduled, each resource in the order tasks became ready.
Timeline run(const TaskGraph& graph, Timeline out, const std::vector<bool>& kept) {
  const std::size_t n = graph.tasks.size();
  out.start.resize(n, 0);
  out.finish.resize(n, 0);
  std::vector<int> remaining(n, 0);
  std::vector<double> ready(n, 0);
  std::vector<std::vector<int>> dependents(n);
  std::unordered_map<std::int64_t, double> free_at;
  for (std::size_t i = 0; i < n; ++i) {
    for (int d : graph.tasks[i].deps) {
      dependents[static_cast<std::size_t>(d)].push_back(static_cast<int>(i));
      if (kept[i]) continue;
      if (kept[static_cast<std::size_t>(d)])
        ready[i] = std::max(ready[i], out.finish[static_cast<std::size_t>(d)]);
      else
        ++remaining[i];
    }
    if (kept[i])
      for_each_resource(graph.tasks[i], graph.devices, [&](std::int64_t r) {
        auto& f = free_at[r];
        f = std::max(f, out.finish[i]);
      });
  }
  using Entry = std::tuple<double, int>;  // ready time, task (lower index first on ties)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  for (std::size_t i = 0; i < n; ++i)
    if (!kept[i] && remaining[i] == 0) queue.emplace(ready[i], static_cast<int>(i));
  std::size_t scheduled = 0;
  while (!queue.empty()) {
    const auto [at, i] = queue.top();
    queue.pop();
    ++scheduled;
    const SimTask& t = graph.tasks[static_cast<std::size_t>(i)];
    double start = at;
    for_each_resource(t, graph.devices, [&](std::int64_t r) { start = std::max(start, free_at[r]); });
    out.start[static_cast<std::size_t>(i)] = start;
    out.finish[static_cast<std::size_t>(i)] = start + t.seconds;
    for_each_resource(t, graph.devices, [&](std::int64_t r) { free_at[r] = start + t.seconds; });
    for (int d : dependents[static_cast<std::size_t>(i)]) {
      auto& r = ready[static_cast<std::size_t>(d)];
      r = std::max(r, start + t.seconds);
      if (--remaining[static_cast<std::size_t>(d)] == 0) queue.emplace(r, d);
    }
  }
  const std::size_t waiting = static_cast<std::size_t>(std::count(kept.begin(), kept.end(), false));
  if (scheduled < waiting) {
    for (std::size_t i = 0; i < n; ++i)
      if (!kept[i] && remaining[i] > 0)
        throw LoomError("the tasks wait for each other in a cycle (task " + graph.tasks[i].label +
                        " never becomes ready): an order the plan imposes runs against its data or its pipeline");
  }
  out.makespan = 0;
  for (double f : out.finish) out.makespan = std::max(out.makespan, f);
  return out;
}

}  // namespace

std::vector<double> Timeline::busy_seconds(const TaskGraph& graph) const {
  std::vector<double> busy(static_cast<std::size_t>(graph.devices), 0);
  for (std::size_t i = 0; i < graph.tasks.size(); ++i)
    if (graph.tasks[i].kind == TaskKind::Compute) busy[static_cast<std::size_t>(graph.tasks[i].device)] += finish[i] - start[i];
  return busy;
}

Timeline simulate(const TaskGraph& graph) { return run(graph, Timeline{}, std::vector<bool>(graph.tasks.size(), false)); }

Timeline simulate_delta(const TaskGraph& graph, const Timeline& previous, const std::vector<int>& changed) {
  // A changed task could start no earlier than its earliest dependency finished; tasks that had
  // been taken up before that moment were scheduled without seeing any change.
  double horizon = std::numeric_limits<double>::infinity();
  for (int c : changed) {
    double ready = 0;
    for (int d : graph.tasks[static_cast<std::size_t>(c)].deps) ready = std::max(ready, previous.finish[static_cast<std::size_t>(d)]);
    horizon = std::min(horizon, ready);
  }
  std::vector<bool> kept(graph.tasks.size(), false);
  for (std::size_t i = 0; i < graph.tasks.size(); ++i) {
    double ready = 0;
    for (int d : graph.tasks[i].deps) ready = std::max(ready, previous.finish[static_cast<std::size_t>(d)]);
    kept[i] = ready < horizon;
  }
  for (int c : changed) kept[static_cast<std::size_t>(c)] = false;
  return run(graph, previous, kept);
}

}  // namespace loom::search
