#pragma once
// What the task graph reads of a plan before it makes any task: the devices of each node, which
// chains of layout changes the runtime fuses and what each moves from (pcg/layout_fusion.hpp),
// and which devices read which boxes of each weight (pcg/gradient_sums.hpp).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "loom/pcg/gradient_sums.hpp"
#include "loom/search/task_graph.hpp"

namespace loom::search {

class PlanLayout {
 public:
  PlanLayout(const pcg::Graph& graph, const CostModel& model);

  const pcg::Graph& graph() const { return graph_; }
  const CostModel& model() const { return model_; }
  const Machine& machine() const { return machine_; }

  // The node's machine view (device 0 onwards when it has none); throws LoomError naming the node
  // when it uses a device the machine lacks.
  pcg::MachineView view_of(const pcg::Node& n) const;
  bool is_layout_change(const pcg::Node& n) const;
  // The value a layout change moves from: its input, or the first input of the chain fused into it.
  pcg::PortRef source_of(const pcg::Node& n) const { return sources_[n.id.index()]; }
  bool fused_away(const pcg::Node& n) const { return fused_away_[n.id.index()]; }
  // A parallelization operator over a data input moves nothing: each device loads its own piece.
  // Nor does one over a weight: each device keeps its shard or replica from one iteration to the
  // next, and replicas are kept equal by summing their gradients.
  bool loads_its_pieces(const pcg::Node& n) const;
  // A parallelization operator producing only a graph output nobody reads moves nothing: the
  // loss is computed where its input's pieces are.
  bool is_unread_output(const pcg::Node& n) const;
  // The devices the graph's tasks run on: one process each in a training run.
  std::set<int> devices_in_use() const;

  // Which devices read which boxes of each weight, by weight node.
  const std::map<pcg::NodeId, pcg::InputReads>& weight_reads() const { return reads_; }
  // The sums of a weight's gradient among the devices reading it.
  std::vector<pcg::GradientShare> shares_of(pcg::NodeId weight, const pcg::InputReads& reads) const;

  std::vector<pcg::PortRef> sources() const { return sources_; }
  // Whether n's values take a gradient (CostModel::gradient_values): a node whose values take none
  // (made from data alone, or read only by a pass that feeds the next through detached inputs)
  // runs no backward.
  bool runs_backward(const pcg::Node& n) const { return takes_gradient_[n.id.index()]; }
  // Whether no gradient reaches n, which leads to the outputs only through detached inputs
  // (cut_off_from_gradients): its tasks, moves included, have no part in the backward pass.
  bool forward_only(pcg::NodeId n) const { return n.value() >= 0 && forward_only_[n.index()]; }

 private:
  const pcg::Graph& graph_;
  const CostModel& model_;
  const Machine& machine_;
  std::vector<pcg::PortRef> sources_;             // node -> what a layout change moves from
  std::vector<bool> fused_away_;                  // node -> a layout change fused into the next
  std::map<pcg::NodeId, pcg::InputReads> reads_;  // by weight node
  std::vector<bool> takes_gradient_;              // node -> CostModel::gradient_values
  std::vector<bool> forward_only_;                // node -> cut_off_from_gradients
};

// Appends a task; returns its index.
inline int add_task(TaskGraph& graph, SimTask t) {
  graph.tasks.push_back(std::move(t));
  return static_cast<int>(graph.tasks.size()) - 1;
}

// Devices that do not overlap communication wait in it: the task holds them too.
inline void hold_devices(const Machine& machine, SimTask& t, std::vector<int> devices) {
  if (!machine.device.overlaps_communication) t.holds = std::move(devices);
}

// `devices` but `device`.
inline std::vector<int> others_than(const std::vector<int>& devices, int device) {
  std::vector<int> others;
  for (int d : devices)
    if (d != device) others.push_back(d);
  return others;
}

// Where devices wait in their communication, the task's device meets `others` in it (SimTask::meets).
inline void meet_in(const Machine& machine, SimTask& t, std::vector<int> others) {
  if (!machine.device.overlaps_communication) t.meets = std::move(others);
}

inline constexpr double kBytesPerLossShare = 8;  // a process's share of the loss, in double

// The time the processes on `devices` take to sum their shares of the loss, a number each, as a
// training run does once per step.
inline double loss_shares_summed_seconds(const Machine& machine, const std::set<int>& devices) {
  if (devices.size() < 2) return 0;
  return machine.link_between(*devices.begin(), *devices.rbegin())
      .ring_allreduce_seconds(kBytesPerLossShare, static_cast<int>(devices.size()));
}

// A task that finishes once `deps` have, for the tasks that wait for all of them.
int add_join(TaskGraph& out, pcg::NodeId node, std::vector<int> deps, std::string label);

// How the devices of a ring sum take part in it: a gradient sum they wait in (priced as such, and
// where devices wait in their communication they meet in it), one they start beside the backward
// pass (its own rate, meeting no one), or the processes' sum of their losses, which each process
// blocks in (priced as a waited sum, and always a meeting).
enum class RingSum { Waited, Started, Blocking };

struct RingAllreduce {
  pcg::NodeId node;  // the node it belongs to (kNoNode: the losses)
  std::vector<int> devices;
  double bytes = 0;  // the buffer each device sums
  RingSum sum = RingSum::Waited;
};

// A ring allreduce: a step from each of its devices to the next, each after `ready`, each device
// sending 2(k-1)/k of the buffer at the rate of its link to the next, holding its device where
// devices wait in their communication. Returns a join of the steps, labelled `summed_label`; the
// steps are labelled `step_label` and their ends.
int add_ring_allreduce(TaskGraph& out, const Machine& machine, const RingAllreduce& ring, int ready, const std::string& step_label,
                       const std::string& summed_label);

// The forward tasks that read each weight: by weight node, then device.
using WeightReaders = std::map<pcg::NodeId, std::map<int, std::vector<int>>>;

// Appends the forward pass's tasks (and the loss, unless RunWork::LeftOut) to `out`; returns
// which of them read each weight.
WeightReaders add_forward_tasks(const PlanLayout& plan, RunWork run_work, TaskGraph& out);

// Appends the backward pass: every forward task mirrored in reverse order, then the sums of the
// weights' gradients (run as `sums` says) and the weight updates.
void add_backward_tasks(const PlanLayout& plan, const WeightReaders& readers, GradientSums sums, TaskGraph& out);

}  // namespace loom::search
