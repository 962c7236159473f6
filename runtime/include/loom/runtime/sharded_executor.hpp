#pragma once
// Runs a plan's PCG task by task, as its machine views place the tasks: a process runs the tasks
// of its rank's device (rank r runs device r; a single process runs every device) and keeps only
// their pieces. Values move between tasks as pcg::piece_moves says, through a Transport; each
// operator task runs its kernel on its own pieces. Graph inputs and weights are given whole to
// every process (each reads the boxes its tasks need); an output is read in the pieces the
// processes hold (a layout change that would only gather it is not run) or assembled whole on
// every process. The gradient of an input or weight is summed only among the processes that read the
// same box of it, as replicas synchronise in data parallelism; a box one process reads alone
// needs no message. So each process's gradient is exact on the boxes it reads, which is all an
// optimizer step there needs; `assemble` makes such per-process values whole.
//
// Pieces, received copies, gradients and the values fed are held as Values: a backend whose
// kernels compute in device memory (Kernel::forward_values) leaves what they make there, so in one
// process nothing crosses to the host but what the caller reads (the output pieces for the loss).
// Messages, boxes cut out and collectives run in host memory, which stages device values.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/gradient_sums.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/pcg/piece_moves.hpp"
#include "loom/runtime/gradient_sync.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "loom/runtime/optimizer.hpp"
#include "loom/runtime/step_trace.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/timed_transport.hpp"
#include "loom/runtime/transport.hpp"

namespace loom::runtime {

// Time one process spent in one node's tasks since the executor was made (or its times were
// restarted): for each task, preparing the call, the kernel, and storing its outputs or adding up
// the gradients it gives; the messages and collectives are not included. A layout change (a
// parallel operator, or the chain fused into it) counts one task per piece of its new layout the
// process holds, and its time is the process's whole work in the change outside the messages and
// collectives: cutting boxes out, packing, placing and adding up what arrives. A weight's node
// runs no task; the trainer adds the optimizer's steps over it as its updates. A kernel or an
// update that queues its work on a device (Backend::Cuda's) returns before that work is done: its
// time counts the queuing, and the wait falls on whatever next reads a value back to the host.
struct OperatorTime {
  double forward_seconds = 0, backward_seconds = 0;
  std::int64_t forward_tasks = 0, backward_tasks = 0;  // task runs measured
  double update_seconds = 0;                           // a weight: the optimizer's steps over the elements it updates here
  std::int64_t updates = 0;                            // steps measured

  double forward_per_task() const { return forward_tasks ? forward_seconds / static_cast<double>(forward_tasks) : 0; }
  double backward_per_task() const { return backward_tasks ? backward_seconds / static_cast<double>(backward_tasks) : 0; }
};

// Devices a graph's machine views place tasks on (one for a graph without views).
int devices_used(const pcg::Graph& graph);

template <class T>
class ShardedExecutor {
 public:
  // Throws LoomError naming a node the library cannot run, or when a process count above one
  // differs from the plan's device count.
  // Kernels are looked up for `backend` first, then the CPU; an op with neither runs compiled
  // from its spec (interpreter_kernel), or interpreted when `compile_from_specs` is false.
  ShardedExecutor(const spec::Library& library, const pcg::Graph& graph, const KernelRegistry& kernels, Transport& transport,
                  std::set<std::string> differentiable, int devices, Backend backend = Backend::Cpu, bool compile_from_specs = true);
  // Its gradient synchronisation refers to its transport: it stays where it is made.
  ShardedExecutor(const ShardedExecutor&) = delete;
  ShardedExecutor& operator=(const ShardedExecutor&) = delete;

  // Operators whose outputs this process drops once the forward pass has read them and computes
  // again when the backward pass needs them (recomputation), with the layout changes made of them;
  // a graph output is always kept. Dropped operators that read each other are computed again
  // together, and each piece is freed once its backward has run; in a co-shard region
  // (search::piecewise_regions) one piece at a time. Throws LoomError naming a node that is not an
  // operator of the graph.
  void recompute(const std::vector<pcg::NodeId>& operators);
  // The most bytes of activations this process has held at once: the pieces operators and layout
  // changes make, the copies of them it received from other processes, and their gradients; not
  // the inputs and weights, the pieces cut from them, or their gradients and optimizer state.
  // Counted as pieces are stored and freed, over every pass since the executor was made.
  std::size_t peak_activation_bytes() const { return meter_->peak; }
  // Counts this executor's activations with `other`'s, so that the peak is what both hold at once
  // (the executors of a pipeline's micro-batches in flight together).
  void count_activations_with(const ShardedExecutor& other) { meter_ = other.meter_; }
  // The transport channel its passes' messages take (Transport::use_channel): each executor of a
  // pipeline's micro-batches takes its own.
  void use_message_channel(int channel) { channel_ = channel; }
  // While on, backward() leaves the gradients of inputs and weights unsummed among the processes
  // that read them, and gives only those this process computes, and sum_gradients() sums them: a
  // pipeline adds up its micro-batches' gradients and sums them once per step. A collective every
  // process calls.
  void sum_gradients_later(bool on) { sum_later_ = on; }
  void sum_gradients(NamedValues<T>& grads) { sync_->sum_all(grads); }

  // `batch`, when given, holds values of graph inputs that take the place of those `feeds` has (a
  // micro-batch's rows, the weights staying in `feeds`). Both must stay alive and unchanged until
  // the backward pass has run.
  void forward(const NamedValues<T>& feeds, const NamedValues<T>* batch = nullptr) { forward_lap(feeds, batch, {}, 0); }
  // The forward pass of the nodes of lap `lap` alone (`laps`, per node: search::pipeline_laps;
  // empty: every node is of lap 0). Lap 0 starts the pass; each later lap goes on with it, in turn.
  void forward_lap(const NamedValues<T>& feeds, const NamedValues<T>* batch, const std::vector<int>& laps, int lap);
  // The same from host tensors, which the executor copies and keeps until the next forward pass.
  void forward(const NamedTensors<T>& feeds);
  // Graph output i, whole, on every process (a collective).
  Tensor<T> output(std::size_t i);
  // A box of a graph output that this process holds after forward().
  struct OutputPiece {
    pcg::Region box;
    const Value<T>* value;
  };
  // The boxes of graph output i this process holds: over all processes they cover the output
  // once, so a process can take its share of a loss without assembling the output.
  std::vector<OutputPiece> output_pieces(std::size_t i) const;
  // The rank of the process holding each task's piece of graph output i, as output_layout(i) cuts
  // it (the same on every process).
  std::vector<int> output_ranks(std::size_t i) const;
  // How output_pieces(i) cut the output (the same on every process).
  const pcg::ParallelShape& output_layout(std::size_t i) const { return graph_.shape_of(held_output(i)); }
  // `output_grads[i]`: the gradient of graph output i, whole (the same on every process). Returns
  // the gradient of every differentiable input and weight, exact on the boxes this process reads
  // and zero elsewhere (whole on every process when they are read in boxes that overlap).
  NamedTensors<T> backward(const std::vector<Tensor<T>>& output_grads) { return to_host(backward_values(output_grads)); }
  // The same, each gradient where the backend left it.
  NamedValues<T> backward_values(const std::vector<Tensor<T>>& output_grads);
  // The same from the gradients of the boxes output_pieces() gives, per output in its order.
  NamedValues<T> backward_from_pieces(std::vector<std::vector<Tensor<T>>> piece_grads);
  // Values of differentiable inputs that each process keeps exact only on the boxes it reads
  // (weights after optimizer steps with backward()'s gradients, the gradients themselves,
  // optimizer moments) made whole and equal on every process, each box taken from the first
  // process that reads it; a collective every process calls. Other names are left as they are.
  void assemble(NamedValues<T>& values) { sync_->assemble(values); }
  // Per differentiable input, the elements whose gradient backward() makes exact here: those an
  // optimizer step here needs to update (none in a single-process run: everything is exact).
  const ElementRanges* exact_elements() const { return transport_.size() > 1 ? &sync_->exact() : nullptr; }

  // Operators with a task on this process.
  std::size_t local_operators() const;
  // The first operator (in graph order) whose output holds a NaN or an infinity on any process,
  // after forward(), among those it keeps (recomputed outputs are freed by then); every process
  // calls it and gets the same answer.
  std::optional<pcg::NodeId> first_non_finite();
  // The operators whose kernel takes `route` (compiled from specs, or interpreted), described
  // for reports.
  std::vector<std::string> operators_running(KernelRoute route) const;
  // Parallel operators whose layout change, forward and backward, runs as `kind` within groups
  // of processes rather than as messages (none in a single process, which keeps every piece).
  std::vector<pcg::NodeId> collective_nodes(Collective kind) const;
  // Per node, the time this process spent in its tasks (zero for parallel operators).
  const std::vector<OperatorTime>& operator_times() const { return times_; }
  // Counts the operator times from zero again, e.g. after warm-up steps.
  void restart_operator_times() { times_.assign(times_.size(), OperatorTime{}); }
  // Records its tasks, layout changes and transport calls into `trace` (none: no longer) as
  // micro-batch `microbatch`'s work.
  void trace_into(StepTrace* trace, int microbatch = 0) {
    trace_ = trace;
    trace_microbatch_ = microbatch;
    transport_.trace_into(trace);
  }
  const pcg::Graph& graph() const { return graph_; }
  // Per node, whether its values take a gradient (search::gradient_flow from the differentiable
  // inputs): those whose backward runs.
  std::vector<bool> values_taking_gradients() const;

 private:
  struct NodeRun {
    Kernel<T> kernel;
    bool parallel = false;
    // Its values take a gradient (search::gradient_flow): made from a differentiable input, and
    // not read only by passes that feed the outputs through detached inputs.
    bool differentiated = false;
    std::vector<bool> detached;  // per input: its spec passes no gradient back to it
    pcg::MachineView view;
    std::int64_t local_pieces = 0;  // tasks of the node this process runs (a layout change's pieces held here)
    // A parallel operator's layout change runs from `source`: its input, or the input of a
    // chain of parallel operators before it that is fused into it (pcg/layout_fusion.hpp).
    pcg::PortRef source;
    bool fused_away = false;  // a parallel operator whose change the next one makes
    // A layout change giving a graph output that no node reads (the whole output a plan ends
    // with): it is not run, and the output is read in the pieces of its source, as the simulator
    // charges it. Partial sums are still added up.
    bool output_read_at_source = false;
    std::vector<pcg::PieceMove> moves;  // from the source's layout to the output's
    // The moves as one collective within groups of processes; null: they run point to point.
    std::shared_ptr<const pcg::CollectiveGroups> collective;
    // Every piece is a whole graph input: the pieces are read from the feeds, never copied.
    bool replicates_input = false;
  };
  using Pieces = std::vector<Value<T>>;  // per task; empty values for tasks of other processes
  // The moves from `in` to n's output as collectives, or null.
  std::shared_ptr<const pcg::CollectiveGroups> collective_groups_of(const pcg::Node& n, pcg::PortRef in,
                                                                    const std::vector<pcg::PieceMove>& moves) const;
  // Its inputs as values (a ValueCall) or as host tensors.
  template <class Held>
  OpCall<T, Held> call_for(const pcg::Node& n, std::int64_t task) const;
  bool local(pcg::NodeId node, std::int64_t task) const;
  // Whether n's backward computes the gradient of input i: its values take one, and n passes it back.
  bool takes_gradient_from(const pcg::Node& n, std::size_t i) const {
    return runs_[n.inputs[i].node.index()].differentiated && !runs_[n.id.index()].detached[i];
  }
  int rank_of(pcg::NodeId node, std::int64_t task) const;
  // The port whose pieces hold graph output i: the output's, or its source's where the layout
  // change making it is not run.
  pcg::PortRef held_output(std::size_t i) const;
  // Piece `task` of a port as this process holds it (graph inputs and their replicas: the feed).
  const Value<T>& held(pcg::PortRef port, std::int64_t task) const;
  const Value<T>& input_piece(pcg::NodeId node, std::size_t input, std::int64_t task) const;
  void run_operator(const pcg::Node& n);
  // Runs task `task` of n if it is this process's (every task: -1), its inputs at hand.
  void run_tasks(const pcg::Node& n, std::int64_t task = -1);
  // The backward pass of a co-shard region, piece by piece (piecewise_regions).
  void region_backward(const std::vector<pcg::NodeId>& region, std::vector<std::vector<Pieces>>& grads, NamedValues<T>& input_grads);
  // Receives the pieces of n's inputs that other processes hold, as run_operator needs them.
  void receive_inputs(const pcg::Node& n);
  // The nodes whose values n's forward pass reads: an operator's inputs, a layout change's source.
  std::vector<pcg::NodeId> reads_of(const pcg::Node& n) const;
  // Runs n's forward pass again, and first those of the dropped values it reads (recomputation).
  void restore(pcg::NodeId node);
  // Restores what n's backward reads that was dropped: its inputs, and its own outputs.
  void restore_for_backward(const pcg::Node& n);
  // Frees node's pieces and the copies of them received by the nodes reading them.
  void release_dropped(pcg::NodeId node);
  // Counts node's pieces, received copies and gradients again into the live and peak bytes.
  void recount(pcg::NodeId node);
  void move_pieces(const pcg::Node& n);
  // Of task `only_task` alone when given.
  void operator_backward(const pcg::Node& n, std::vector<std::vector<Pieces>>& grads, NamedValues<T>& input_grads,
                         std::int64_t only_task = -1);
  // The input gradients of task t from its kernel, in either form.
  std::vector<Value<T>> task_backward(const pcg::Node& n, std::int64_t t, std::vector<std::vector<Pieces>>& grads);
  void move_backward(const pcg::Node& n, std::vector<std::vector<Pieces>>& grads, NamedValues<T>& input_grads);
  // Runs `work`, a pass of layout change `n` (forward, or backward), adding its time outside the
  // transport and the pieces of n's output this process holds to n's operator time.
  template <class Work>
  void time_layout_change(const pcg::Node& n, bool backward, Work&& work);
  // Tells the trace that n's work (forward or backward) is under way, for the transport calls it
  // makes.
  void trace_working_on(pcg::NodeId n, bool backward) {
    if (trace_) trace_->working_on(n, trace_microbatch_, backward);
  }
  void trace_span(TracedWork work, pcg::NodeId n, std::int64_t task, StepTrace::Clock::time_point begin) {
    if (trace_) trace_->add(work, n, task, trace_microbatch_, begin);
  }

  const pcg::Graph& graph_;
  TimedTransport transport_;  // the given transport, timed to leave its calls out of layout changes' times
  std::set<std::string> differentiable_;
  int devices_;
  std::vector<NodeRun> runs_;
  const NamedValues<T>* feeds_ = nullptr;
  const NamedValues<T>* batch_ = nullptr;  // in front of feeds_, when given
  NamedValues<T> copied_feeds_;            // what forward() from host tensors reads
  // The value fed to graph input `name`.
  const Value<T>& fed(const std::string& name) const;
  bool sum_later_ = false;
  std::vector<std::vector<Pieces>> values_;    // per node, port, task
  std::vector<std::vector<Pieces>> received_;  // per node, input, task: pieces read from other processes
  std::vector<std::vector<Pieces>> grads_;     // per node, port, task: in the backward pass
  std::vector<OperatorTime> times_;
  std::vector<bool> dropped_;                      // per node: its values are recomputed, not kept
  std::vector<bool> freed_after_forward_;          // per node: freed once read (search::freed_after_forward)
  std::vector<pcg::NodeId> last_reader_;           // per node: the last node whose forward pass reads it (itself if none)
  std::vector<bool> restored_;                     // per node: dropped values computed again in this backward pass
  std::vector<std::vector<pcg::NodeId>> regions_;  // co-shard regions whose backward runs piece by piece
  std::vector<int> region_of_;                     // per node: its region's index, or -1
  std::vector<bool> counted_;                      // per node: its values are activations (not cut from inputs)
  std::vector<std::size_t> node_bytes_;            // per node: bytes of its counted pieces, copies and gradients
  struct ActivationMeter {
    std::size_t live = 0, peak = 0;
  };
  std::shared_ptr<ActivationMeter> meter_ = std::make_shared<ActivationMeter>();
  int channel_ = 0;
  StepTrace* trace_ = nullptr;
  int trace_microbatch_ = 0;
  bool recomputing_ = false;               // forward tasks run now compute dropped values again for the backward pass
  std::unique_ptr<GradientSync<T>> sync_;  // made last in construction, from the fused layout changes
};

}  // namespace loom::runtime
