// The backward pass of FlexFlow's task graph: every forward task mirrored, then the weights'
// gradient sums, run as the runtime runs them, and the weight updates.
#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>

#include "loom/pcg/task_layout.hpp"
#include "task_graph_plan.hpp"

namespace loom::search {
namespace {

// Gradient boxes summed among devices are packed into one buffer and unpacked after the sum: six
// passes over their bytes.
constexpr double kGradientPackPasses = 6;

// Every forward task mirrored in reverse order. Returns each forward task's mirror. A task of a node
// no gradient reaches (PlanLayout::forward_only) is mirrored as nothing to do, after its own forward
// result: no gradient comes to it, so its mirror waits for none.
std::vector<int> mirror_backward(const PlanLayout& plan, TaskGraph& out) {
  const int forward_count = static_cast<int>(out.tasks.size());
  std::vector<std::vector<int>> dependents(static_cast<std::size_t>(forward_count));
  for (int i = 0; i < forward_count; ++i)
    for (int d : out.tasks[static_cast<std::size_t>(i)].deps) dependents[static_cast<std::size_t>(d)].push_back(i);
  std::vector<int> mirror(static_cast<std::size_t>(forward_count), -1);
  for (int i = forward_count - 1; i >= 0; --i) {
    SimTask b = out.tasks[static_cast<std::size_t>(i)];
    b.backward = true;
    if (b.kind == TaskKind::Compute) {
      b.seconds = b.backward_seconds;
      b.meets.clear();  // the loss's shares are summed once, forward
    } else {
      // The same devices meet, the other way round.
      std::replace(b.meets.begin(), b.meets.end(), b.peer, b.device);
      std::swap(b.device, b.peer);
    }
    b.deps.clear();
    if (plan.forward_only(b.node)) {
      b.seconds = 0;
      b.bytes = 0;
      b.meets.clear();
    } else {
      for (int j : dependents[static_cast<std::size_t>(i)]) b.deps.push_back(mirror[static_cast<std::size_t>(j)]);
    }
    if (b.deps.empty()) b.deps.push_back(i);  // a sink: its gradient follows its own forward result
    b.label += kBackwardLabel;
    mirror[static_cast<std::size_t>(i)] = add_task(out, std::move(b));
  }
  return mirror;
}

// A ring allreduce of packed boxes, or of one whole gradient summed in place.
struct SumGroup {
  double bytes = 0;
  pcg::NodeId node;
  std::vector<int> deps;
};

// The node whose backward completes the group, its devices, and the weight summed in place (-1
// for packed boxes).
struct SumGroupKey {
  pcg::NodeId complete_at;
  std::vector<int> devices;
  pcg::NodeId in_place;  // the weight summed in place, or kNoNode
  bool operator<(const SumGroupKey& o) const {
    return std::tie(complete_at, devices, in_place) < std::tie(o.complete_at, o.devices, o.in_place);
  }
};

struct Update {
  double seconds = 0;
  bool estimated = false;  // some box's update is not measured: the device pays a launch
  pcg::NodeId node;
  std::vector<int> deps;
};

// As the runtime does it: the devices that read the same box of a weight sum their gradients of
// it as soon as the backward pass has made them, overlapping the rest of the pass. A weight's
// gradient is complete once the pass is past its first reader in graph order; the weights
// complete at the same node are summed together, one ring allreduce per group of devices over
// every box that group shares. Then each device updates the weight elements it holds (the cost
// model's weight_update of each box).
void synchronize_weights(const PlanLayout& plan, const WeightReaders& weight_readers, const std::vector<int>& mirror, GradientSums sums,
                         TaskGraph& out) {
  const Machine& machine = plan.machine();
  const std::map<int, std::vector<int>> none;
  std::map<SumGroupKey, SumGroup> groups;
  std::map<int, Update> updates;  // by device
  for (const auto& [weight, reads] : plan.weight_reads()) {
    const auto found = weight_readers.find(weight);
    const std::map<int, std::vector<int>>& readers = found == weight_readers.end() ? none : found->second;
    pcg::NodeId complete_at = std::numeric_limits<int>::max();
    for (const auto& [device, tasks] : readers)
      for (int t : tasks) complete_at = std::min(complete_at, out.tasks[static_cast<std::size_t>(t)].node);
    // The gradient tasks of the weight on the given devices.
    const auto after = [&](const std::vector<int>& devices) {
      std::vector<int> tasks;
      for (int d : devices)
        if (auto it = readers.find(d); it != readers.end())
          for (int t : it->second) tasks.push_back(mirror[static_cast<std::size_t>(t)]);
      return tasks;
    };
    const std::vector<std::int64_t>& whole = plan.graph().node(weight).output_shapes[0].dims;
    for (const auto& [devices, box] : plan.shares_of(weight, reads)) {
      if (devices.size() > 1) {
        SumGroup& g = groups[{complete_at, devices, pcg::gradient_summed_in_place(box, pcg::whole_region(whole)) ? weight : pcg::kNoNode}];
        if (g.deps.empty()) g.node = weight;
        g.bytes += static_cast<double>(box.elements()) * kBytesPerElement;
        const std::vector<int> deps = after(devices);
        g.deps.insert(g.deps.end(), deps.begin(), deps.end());
      }
      const TaskEstimate update = plan.model().weight_update(box.extent(), whole);
      for (int d : devices) {
        std::vector<pcg::NodeId>& held = out.gradients_on[d];
        if (held.empty() || held.back() != weight) held.push_back(weight);
        Update& u = updates[d];
        if (u.deps.empty()) u.node = weight;
        u.seconds += update.seconds;
        u.estimated = u.estimated || !update.measured;
        if (devices.size() == 1) {
          const std::vector<int> deps = after(devices);
          u.deps.insert(u.deps.end(), deps.begin(), deps.end());
        }
      }
    }
  }
  // Per device, the first node in graph order whose backward computes on it: its backward pass
  // ends there. Asked only where the sums run during the backward pass.
  std::map<int, pcg::NodeId> last_backward;
  if (sums == GradientSums::DuringTheBackward)
    for (std::size_t i = 0; i < mirror.size(); ++i) {
      const SimTask& t = out.tasks[i];
      if (t.kind != TaskKind::Compute || plan.forward_only(t.node) || t.backward_seconds <= 0) continue;
      const auto [at, fresh] = last_backward.try_emplace(t.device, t.node);
      if (!fresh && t.node < at->second) at->second = t.node;
    }
  // A sum completed where its devices have no backward left to compute is waited in, as the runtime
  // finishes its sums, and so is every sum of a pipeline's step: it costs what a sum that the
  // devices wait in costs. Those completed earlier in a step of one batch run beside the rest of
  // the pass.
  const auto waited_in = [&](const SumGroupKey& key) {
    return std::none_of(key.devices.begin(), key.devices.end(), [&](int d) {
      const auto at = last_backward.find(d);
      return at != last_backward.end() && at->second < key.complete_at;
    });
  };
  for (auto& [key, g] : groups) {
    const std::vector<int>& devices = key.devices;
    const bool waited = waited_in(key);
    std::vector<int> packs;
    const std::string group =
        "gradients of weight#" + pcg::to_string(g.node) + " and those summed with it on " + std::to_string(devices.size()) + " devices";
    const int computed = add_join(out, g.node, std::move(g.deps), group + " computed");
    if (key.in_place < 0) {  // a gradient summed in place is not packed
      for (int d : devices) {
        SimTask pack;
        pack.node = g.node;
        pack.device = d;
        pack.backward = true;
        pack.seconds = kGradientPackPasses * g.bytes / machine.device.memory_bandwidth;
        pack.deps = {computed};
        pack.label = "gradient pack on " + std::to_string(d);
        packs.push_back(add_task(out, std::move(pack)));
      }
    }
    const int ring_ready = packs.empty() ? computed : add_join(out, g.node, std::move(packs), group + " packed");
    const int summed = add_ring_allreduce(out, machine, {g.node, devices, g.bytes, waited ? RingSum::Waited : RingSum::Started}, ring_ready,
                                          "gradient allreduce", group + " summed");
    for (int d : devices) updates[d].deps.push_back(summed);
  }
  for (auto& [device, u] : updates) {
    SimTask t;
    t.node = u.node;
    t.device = device;
    t.backward = true;
    t.seconds = u.seconds + (u.estimated ? machine.device.kernel_overhead : 0);
    t.deps = std::move(u.deps);
    t.label = "weight update on " + std::to_string(device);
    out.update_on[device] = add_task(out, std::move(t));
  }
}

}  // namespace

int add_join(TaskGraph& out, pcg::NodeId node, std::vector<int> deps, std::string label) {
  SimTask join;
  join.kind = TaskKind::Join;
  join.node = node;
  join.device = -1;
  join.backward = true;
  join.deps = std::move(deps);
  join.label = std::move(label);
  return add_task(out, std::move(join));
}

int add_ring_allreduce(TaskGraph& out, const Machine& machine, const RingAllreduce& ring, int ready, const std::string& step_label,
                       const std::string& summed_label) {
  const std::vector<int>& devices = ring.devices;
  const auto k = static_cast<double>(devices.size());
  const int k_devices = static_cast<int>(devices.size());
  std::vector<int> steps;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    SimTask t;
    t.kind = TaskKind::Communication;
    t.node = ring.node;
    t.device = devices[i];
    t.peer = devices[(i + 1) % devices.size()];
    t.backward = true;
    // Each device sends (k-1)/k of the buffer twice: reduce-scatter, then all-gather.
    t.bytes = 2 * (k - 1) / k * ring.bytes;
    const Link& link = machine.link_between(t.device, t.peer);
    t.seconds = ring.sum == RingSum::Started ? link.started_ring_allreduce_seconds(ring.bytes, k_devices)
                                             : link.ring_allreduce_seconds(ring.bytes, k_devices);
    t.deps = {ready};
    t.label = step_label + " " + std::to_string(t.device) + "->" + std::to_string(t.peer);
    hold_devices(machine, t, {t.device});
    if (ring.sum == RingSum::Waited) meet_in(machine, t, others_than(devices, t.device));
    if (ring.sum == RingSum::Blocking) t.meets = others_than(devices, t.device);
    steps.push_back(add_task(out, std::move(t)));
  }
  return add_join(out, ring.node, std::move(steps), summed_label);
}

void add_backward_tasks(const PlanLayout& plan, const WeightReaders& readers, GradientSums sums, TaskGraph& out) {
  synchronize_weights(plan, readers, mirror_backward(plan, out), sums, out);
}

}  // namespace loom::search
