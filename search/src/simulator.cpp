#include "loom/search/simulator.hpp"

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/meeting_wait.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <tuple>
#include <unordered_map>

namespace loom::search {
namespace {

// Each task's resources (its own, its network ports, then the devices it holds; a join's none) as dense indices: `of[i]` to
// `of[i + 1]` in `index`, `count` in all. The event loop then keeps a resource's free time in a
// vector rather than a map.
struct Resources {
  std::vector<std::size_t> of;
  std::vector<int> index;
  std::size_t count = 0;
};

Resources dense_resources(const TaskGraph& graph) {
  Resources r;
  r.of.reserve(graph.tasks.size() + 1);
  r.of.push_back(0);
  std::unordered_map<std::int64_t, int> dense;
  auto add = [&](std::int64_t resource) {
    const auto [it, added] = dense.emplace(resource, static_cast<int>(dense.size()));
    r.index.push_back(it->second);
  };
  for (const SimTask& t : graph.tasks) {
    if (t.kind != TaskKind::Join) {
      add(t.resource(graph.devices));
      for (std::int64_t port : graph.port_resources(t)) add(port);
      for (int d : t.holds) add(static_cast<std::int64_t>(d));
    }
    r.of.push_back(r.index.size());
  }
  r.count = dense.size();
  return r;
}

// The tasks that wait for each task, `of[i]` to `of[i + 1]` in `task`.
struct Dependents {
  std::vector<std::size_t> of;
  std::vector<int> task;
};

Dependents dependents_of(const TaskGraph& graph) {
  const std::size_t n = graph.tasks.size();
  Dependents out;
  out.of.assign(n + 1, 0);
  for (const SimTask& t : graph.tasks)
    for (int d : t.deps) ++out.of[static_cast<std::size_t>(d) + 1];
  for (std::size_t i = 0; i < n; ++i) out.of[i + 1] += out.of[i];
  out.task.resize(out.of[n]);
  std::vector<std::size_t> next(out.of.begin(), out.of.end() - 1);
  for (std::size_t i = 0; i < n; ++i)
    for (int d : graph.tasks[i].deps) out.task[next[static_cast<std::size_t>(d)]++] = static_cast<int>(i);
  return out;
}

// Where the graph's devices drift apart (TaskGraph::drift), how long each meeting lasts past its
// task's own time. Each device arrives when its last work ends, spread in proportion to the work
// it did since its last meeting. A meeting is settled (its work, the loss's own included, counted
// and its devices' spread started afresh) once the event loop's ready time passes its end, so
// that every task of one meeting (a ring's step, or the loss, on each device) sees the work before
// it alike.
class MeetingWaits {
 public:
  explicit MeetingWaits(const TaskGraph& graph)
      : drift_(graph.drift),
        work_(static_cast<std::size_t>(graph.devices), 0),
        work_ends_(work_.size(), 0),
        worked_at_meeting_(work_.size(), 0) {}

  // The devices of t's meeting, in order, so that each of its tasks takes their arrivals alike;
  // none where it meets no one or the devices keep level.
  std::vector<int> meeting(const SimTask& t) const {
    if (drift_ <= 0 || t.meets.empty()) return {};
    std::vector<int> devices = t.meets;
    devices.push_back(t.device);
    std::sort(devices.begin(), devices.end());
    return devices;
  }

  // How much longer than its own time a task of `meeting`, ready at `ready` and starting at
  // `start`, lasts.
  double wait(const std::vector<int>& meeting, double ready, double start) {
    if (meeting.empty()) return 0;
    settle(ready);
    std::vector<Arrival> arrivals;
    double latest_mean = 0;
    for (int d : meeting) {
      const auto i = static_cast<std::size_t>(d);
      const double spread = drift_ * (work_[i] - worked_at_meeting_[i]);
      arrivals.push_back({work_ends_[i], spread * spread});
      latest_mean = std::max(latest_mean, work_ends_[i]);
    }
    // A task that starts after every mean arrival (its link was busy) waits only past its start.
    return std::max(0.0, latest_mean + expected_meeting_wait(arrivals) - start);
  }

  // Records task `t` of `meeting` (meeting(t)) once scheduled.
  void record(const SimTask& t, std::vector<int> meeting, double finish) {
    if (drift_ <= 0) return;
    const bool computes = t.kind == TaskKind::Compute;
    if (meeting.empty()) {
      if (computes) worked(t.device, t.seconds, finish);
      return;
    }
    PendingMeeting m{finish, std::move(meeting), {}, t.device, computes ? t.seconds : 0, computes};
    for (int d : m.devices) m.work_before.push_back(work_[static_cast<std::size_t>(d)]);
    pending_.push_back(std::move(m));
  }

 private:
  struct PendingMeeting {
    double ends;
    std::vector<int> devices;
    std::vector<double> work_before;  // per device, its work_ when the meeting was scheduled
    int device;                       // the device whose task it is, and that task's own work
    double own_work;
    bool computes;
  };

  void worked(int device, double seconds, double ends) {
    const auto i = static_cast<std::size_t>(device);
    work_[i] += seconds;
    work_ends_[i] = std::max(work_ends_[i], ends);
  }
  void settle(double now) {
    std::erase_if(pending_, [&](const PendingMeeting& m) {
      if (m.ends > now) return false;
      // The latest meeting a device had saw the most of its work, in whatever order they settle.
      for (std::size_t k = 0; k < m.devices.size(); ++k) {
        double& at_meeting = worked_at_meeting_[static_cast<std::size_t>(m.devices[k])];
        at_meeting = std::max(at_meeting, m.work_before[k] + (m.devices[k] == m.device ? m.own_work : 0));
      }
      if (m.computes) worked(m.device, m.own_work, m.ends);
      return true;
    });
  }

  double drift_;
  std::vector<double> work_;               // per device, the seconds it has computed
  std::vector<double> work_ends_;          // per device, when its last work ended
  std::vector<double> worked_at_meeting_;  // per device, work_ when it last met others
  std::vector<PendingMeeting> pending_;    // meetings not yet settled
};

// The event loop shared by the full and the delta simulation. Tasks marked `kept` already have
// their times in `out`; the rest are scheduled, each resource in the order tasks became ready.
Timeline run(const TaskGraph& graph, Timeline out, const std::vector<bool>& kept) {
  const std::size_t n = graph.tasks.size();
  out.start.resize(n, 0);
  out.finish.resize(n, 0);
  std::vector<int> remaining(n, 0);
  std::vector<double> ready(n, 0);
  const Dependents dependents = dependents_of(graph);
  const Resources resources = dense_resources(graph);
  std::vector<double> free_at(resources.count, 0);
  MeetingWaits meetings(graph);
  for (std::size_t i = 0; i < n; ++i) {
    if (kept[i]) {
      for (std::size_t k = resources.of[i]; k < resources.of[i + 1]; ++k) {
        double& f = free_at[static_cast<std::size_t>(resources.index[k])];
        f = std::max(f, out.finish[i]);
      }
      continue;
    }
    for (int d : graph.tasks[i].deps) {
      if (kept[static_cast<std::size_t>(d)])
        ready[i] = std::max(ready[i], out.finish[static_cast<std::size_t>(d)]);
      else
        ++remaining[i];
    }
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
    const auto task = static_cast<std::size_t>(i);
    double start = at;
    for (std::size_t k = resources.of[task]; k < resources.of[task + 1]; ++k)
      start = std::max(start, free_at[static_cast<std::size_t>(resources.index[k])]);
    std::vector<int> meeting = meetings.meeting(graph.tasks[task]);
    const double finish = start + graph.tasks[task].seconds + meetings.wait(meeting, at, start);
    out.start[task] = start;
    out.finish[task] = finish;
    meetings.record(graph.tasks[task], std::move(meeting), finish);
    for (std::size_t k = resources.of[task]; k < resources.of[task + 1]; ++k)
      free_at[static_cast<std::size_t>(resources.index[k])] = finish;
    for (std::size_t k = dependents.of[task]; k < dependents.of[task + 1]; ++k) {
      const auto d = static_cast<std::size_t>(dependents.task[k]);
      ready[d] = std::max(ready[d], finish);
      if (--remaining[d] == 0) queue.emplace(ready[d], static_cast<int>(d));
    }
  }
  const std::size_t waiting = static_cast<std::size_t>(std::count(kept.begin(), kept.end(), false));
  if (scheduled < waiting) {
    for (std::size_t i = 0; i < n; ++i)
      if (!kept[i] && remaining[i] > 0)
        throw LoomError("the tasks wait for each other in a cycle (task " + graph.label_of(i) +
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
    if (graph.tasks[i].kind == TaskKind::Compute)  // its own time, not what it waited for others where it met them
      busy[static_cast<std::size_t>(graph.tasks[i].device)] += graph.tasks[i].seconds;
  return busy;
}

Timeline simulate(const TaskGraph& graph) { return run(graph, Timeline{}, std::vector<bool>(graph.tasks.size(), false)); }

Timeline simulate_delta(const TaskGraph& graph, const Timeline& previous, const std::vector<int>& changed) {
  // A meeting's wait depends on all each device did since the last: such a graph is simulated whole.
  if (graph.drift > 0) return simulate(graph);
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
