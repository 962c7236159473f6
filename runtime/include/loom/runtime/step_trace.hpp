#pragma once
// What each process does in one training step, span by span (`loom train --trace`), timed from the
// step's start: every task of an operator forward and backward (and forward again where the
// backward pass recomputes it), every layout change (its messages included), every message and
// collective charged to the node whose work made it (the gradient sums' start, progress and wait,
// where no node's), the loss (the sum of its shares across processes included), a pipeline's
// adding up of its micro-batches' gradients, and the optimizer step. Operator tasks carry the
// simulator's task labels (search::task_label), so a measured step and a simulated iteration
// (search::simulated_spans) read alike. A backend that queues its kernels on a device (CUDA) is
// timed as it queues them.
#include <chrono>
#include <cstdint>
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/runtime/transport.hpp"
#include "loom/search/trace_file.hpp"

namespace loom::runtime {

enum class TracedWork {
  Forward,
  Backward,
  Recompute,
  LayoutChange,
  LayoutChangeBackward,
  Transport,
  TransportBackward,
  Loss,
  GradientsAddedUp,
  Update
};

// Which call of the transport a span of it is: the gradient sums' name theirs ("sums started",
// "sums progressed", "sums finished"), where no node's work is under way.
enum class TransportCall { Exchange, Sum, Gather, ScatterSums, SwapBlocks, StartSum, Progress, FinishSums, FinishSends };

class StepTrace {
 public:
  using Clock = std::chrono::steady_clock;

  // Drops what was recorded and records from now, the start of the step.
  void start();
  void stop() { on_ = false; }
  // Whether spans name their micro-batch, as a pipeline's task labels do.
  void name_microbatches(bool on) { pipelined_ = on; }
  // Records `work` from `begin` to now, while recording: task `task` of `node` (-1: the node's
  // whole work here) of micro-batch `microbatch`.
  void add(TracedWork work, pcg::NodeId node, std::int64_t task, int microbatch, Clock::time_point begin,
           TransportCall call = TransportCall::Exchange);
  // The node whose work is under way (kNoNode: none), in its micro-batch's forward or backward
  // pass: a transport call now is charged to it.
  void working_on(pcg::NodeId node, int microbatch, bool backward) {
    current_ = node;
    current_microbatch_ = microbatch;
    current_backward_ = backward;
  }
  // Records transport call `what` from `begin` to now, charged to the work under way.
  void add_transport(TransportCall what, Clock::time_point begin) {
    add(current_backward_ ? TracedWork::TransportBackward : TracedWork::Transport, current_, -1, current_microbatch_, begin, what);
  }

  // Every process's spans, named from `graph` (the graph the executors run), each on its rank's
  // row: a collective every process of `transport` calls.
  std::vector<search::TraceSpan> gather(const pcg::Graph& graph, Transport& transport) const;

 private:
  struct Record {
    TracedWork work;
    pcg::NodeId node;
    std::int64_t task;
    int microbatch;
    TransportCall call;
    double start, seconds;
  };
  search::TraceSpan span_of(const Record& r, int rank, const pcg::Graph& graph) const;

  bool on_ = false, pipelined_ = false;
  Clock::time_point origin_;
  std::vector<Record> records_;
  pcg::NodeId current_ = pcg::kNoNode;
  int current_microbatch_ = 0;
  bool current_backward_ = false;
};

}  // namespace loom::runtime
