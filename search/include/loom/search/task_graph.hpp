#pragma once
// FlexFlow's task graph of one training iteration of a PCG on a machine: a compute task per task
// of every operator on the device its machine view names, a communication task for every piece
// of data that must move between devices, then the backward pass mirrored (compute as long as the
// profile database measured, or the roofline of the gradient the spec derives; the same bytes
// moving the other way), then the
// weights: the devices reading the same box of a weight sum their gradients (a ring allreduce per
// group of devices and node completing them, of their packed boxes, and one per large whole
// gradient summed in place) and every device updates the elements it holds. As in training, nothing moves
// to split a data input (each device loads its piece) or to lay out a weight (each device keeps its
// shard or replica), nor to gather a graph output nobody reads (the loss is computed where its
// pieces are). After the forward pass each device takes the loss of its pieces of the output once
// every piece is computed, as a training run's processes sum their shares of the loss. A layout
// change's own work on a device (cutting out, packing, placing and adding up pieces) is charged
// as the bytes it copies, or as measured where the profile database has it. Each device
// and each directed pair of devices runs its tasks one at a time, first come first served, and so
// does each network port between nodes, sending and receiving (a message or ring step between
// nodes holds its sender's port out and its receiver's port in, machine.hpp); on a
// machine whose devices do not overlap communication with computation, a communication task also
// holds the devices taking part in it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "loom/pcg/gradient_sums.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/pcg/layout_fusion.hpp"
#include "loom/pcg/piece_moves.hpp"
#include "loom/search/cost_model.hpp"

namespace loom::search {

// A join does no work and occupies nothing: it finishes when its dependencies have, so that many
// tasks can wait for many others through one task instead of each for each.
enum class TaskKind { Compute, Communication, Join };

// Labels of the work a node does, as the simulator and a traced training step (runtime::StepTrace)
// name it: "matmul#3", task 1 of it "matmul#3[1]", in micro-batch 2 of a pipeline "mb2 matmul#3[1]".
inline std::string node_label(const pcg::Node& n) { return n.op + "#" + pcg::to_string(n.id); }
inline std::string task_label(const pcg::Node& n, std::int64_t task) { return node_label(n) + "[" + std::to_string(task) + "]"; }
inline std::string microbatch_label(int microbatch, const std::string& label) { return "mb" + std::to_string(microbatch) + " " + label; }
// What a backward task's label adds to its forward's.
inline constexpr const char* kBackwardLabel = " (backward)";

inline const char* task_kind_name(TaskKind kind) {
  switch (kind) {
    case TaskKind::Compute: return "compute";
    case TaskKind::Communication: return "communication";
    case TaskKind::Join: break;
  }
  return "join";
}

struct SimTask {
  TaskKind kind = TaskKind::Compute;
  pcg::NodeId node;        // the PCG node the task belongs to (kNoNode: a pipeline's adding up of gradients)
  std::int64_t index = 0;  // which task of the node (for communication: the receiving task)
  int device = 0;          // compute: the device; communication: the sender
  int peer = -1;           // communication: the receiver
  double seconds = 0;
  double backward_seconds = 0;  // compute, forward: what its mirror in the backward pass takes
  double bytes = 0;             // communication: bytes moved
  bool backward = false;
  int microbatch = 0;     // in a pipeline's task graph, the micro-batch the task works on
  std::vector<int> deps;  // tasks that must finish first
  // Communication on devices that do not overlap it: the devices the task holds as well as its
  // link (a message: sender and receiver; a ring step: the device taking part).
  std::vector<int> holds;
  // The other devices this task's device waits for at its start, as they wait for it: where
  // devices wait in their communication, a message's other end and the other devices of a
  // collective or of a sum they wait in; and the other processes at the loss, whose shares they
  // sum. The meeting's expected wait past the
  // latest mean arrival is added to the task where the devices drift apart (TaskGraph::drift).
  std::vector<int> meets;
  std::string label;  // e.g. "matmul#3[1]" or "partition#2[0] 0->3"
  // Compute, backward: the part of `seconds`, at its start, that computes the forward again
  // (recomputation); zero where nothing is recomputed.
  double recompute_seconds = 0;
  // Compute: the tasks among `deps` that an order of the plan (a schedule's `order`) puts ahead of
  // this one rather than the data.
  std::vector<int> ordered_after;

  // The resource the task occupies: a device, or a directed device pair.
  std::int64_t resource(int devices) const {
    return kind == TaskKind::Compute ? device : devices + static_cast<std::int64_t>(device) * devices + peer;
  }
};

struct TaskGraph {
  int devices = 0;
  NetworkPorts ports;      // between nodes, a communication task also holds the network ports it goes through
  bool pipelined = false;  // a pipeline's tasks are labelled without their micro-batch
  // The machine's DeviceSpec::drift: where above 0, a task that meets other devices (SimTask::meets)
  // lasts as long as its meeting is expected to as well (meeting_wait.hpp).
  double drift = 0;
  std::vector<SimTask> tasks;
  // Per device, the trained weights whose gradients it computes (a pipeline adds them up over its
  // micro-batches there), in graph order.
  std::map<int, std::vector<pcg::NodeId>> gradients_on;
  // Per device, the task that updates the weight elements it holds.
  std::map<int, int> update_on;

  // The network ports a task holds besides its own resource: a communication task between
  // nodes, its sender's port out and its receiver's port in (numbered after the device pairs).
  // A task that takes no time (the mirror of a message no gradient comes back through) holds none.
  std::vector<std::int64_t> port_resources(const SimTask& t) const {
    if (t.kind != TaskKind::Communication || t.seconds <= 0 || !ports.between_nodes(t.device, t.peer)) return {};
    const std::int64_t first = devices + static_cast<std::int64_t>(devices) * devices;
    return {first + 2 * static_cast<std::int64_t>(ports.port_of(t.device)),
            first + 2 * static_cast<std::int64_t>(ports.port_of(t.peer)) + 1};
  }

  // Task i's label, with its micro-batch in a pipeline (e.g. "mb2 matmul#3[1]").
  std::string label_of(std::size_t i) const {
    const SimTask& t = tasks[i];
    return pipelined ? microbatch_label(t.microbatch, t.label) : t.label;
  }
};

// Whether the task graph includes the loss a training run's processes take between the passes.
// Included: once the whole output is computed, each process takes the loss of its pieces of it,
// and the processes sum their shares before any backward. EachMicroBatch: as a pipeline's
// micro-batch takes it, on the devices holding its output alone, within the last stage's steps;
// the processes sum their shares once every gradient is summed (the pipeline's task graph adds
// that sum). LeftOut: the operators' tasks alone.
enum class RunWork { Included, EachMicroBatch, LeftOut };

// When the weights' gradient sums run. A step of one batch starts each sum once the backward pass
// is past the weight's first reader, beside the rest of the pass; a pipeline's step sums them once
// every micro-batch's backward has run, and its devices wait in every sum.
enum class GradientSums { DuringTheBackward, AfterThePasses };

// Nodes without a machine view run their tasks on devices 0, 1, ... Throws LoomError naming the
// node when a view places a task outside the machine.
TaskGraph build_task_graph(const pcg::Graph& graph, const CostModel& model, RunWork run_work = RunWork::Included,
                           GradientSums sums = GradientSums::DuringTheBackward);

// Per node of `graph`, what it changes the layout of where it is a layout change (a parallel
// operator or fused form): its input, or the first input of the chain of layout changes fused
// into it, as the task graph charges it and a run of several processes executes it.
std::vector<pcg::PortRef> layout_change_sources(const pcg::Graph& graph, const CostModel& model);
// The same, with the layout changes fused away (pcg::LayoutChangeSources): the account of which
// changes run that the task graph and the memory model share, and that a run of several processes
// makes by the same fusion. Throws LoomError naming the node when the view of a layout change, or
// of a node a chain of them reaches back to, places a task outside the machine.
pcg::LayoutChangeSources layout_changes_as_run(const pcg::Graph& graph, const CostModel& model);

// Per weight node, per device: the boxes of the weight the device updates after each iteration, as
// the task graph charges them (the cost model's weight_update of each).
std::map<pcg::NodeId, std::map<int, std::vector<pcg::Region>>> weight_update_boxes(const pcg::Graph& graph, const CostModel& model);

// The bytes of every communication task, forward and backward.
double communication_bytes(const TaskGraph& graph);

}  // namespace loom::search
