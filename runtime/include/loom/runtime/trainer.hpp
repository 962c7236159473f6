#pragma once
// Training a PCG: initial weights from the seed, a batch per step, forward, the loss on the
// graph's first output, backward, an optimizer step; checkpoints and resume. A plan's graph runs
// task by task as its machine views place the tasks, across the processes of the transport (one
// per device) or all in one process; every process sees the same losses and weights.
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "loom/runtime/loss.hpp"
#include "loom/runtime/optimizer.hpp"
#include "loom/runtime/sharded_executor.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/transport.hpp"
#include "loom/search/plan.hpp"
#include "loom/search/trace_file.hpp"

namespace loom::runtime {

struct TrainSettings {
  std::int64_t steps = 10;  // total steps of the run, counting those before a resume
  OptimizerSettings optimizer;
  LossKind loss = LossKind::CrossEntropy;
  std::uint64_t seed = 1;              // weights and synthetic data
  std::int64_t synthetic_batches = 4;  // distinct synthetic batches, used in turn
  std::string data_file;               // real data instead of synthetic (see data.hpp)
  std::string checkpoint;              // written at the end and every `checkpoint_every` steps
  std::int64_t checkpoint_every = 0;
  std::string resume;              // a checkpoint to continue from
  std::string run_name;            // recorded in checkpoints; a resume must name the same run
  std::int64_t plan_devices = 0;   // devices of the plan the graph comes from (0: those its views use)
  Backend backend = Backend::Cpu;  // where kernels run; ops without a kernel there run on the CPU
  // Steps this process runs first that its times leave out (seconds_per_step, operator_times):
  // the first step pays for making buffers and communicators. Ignored when the process would
  // have no step left to time.
  std::int64_t warmup_steps = 0;
  // Values the model gives its graph inputs and weights (an imported ONNX file's initializers and
  // constants), by node name: weights start at them instead of the seed's draw, and inputs keep
  // them every step instead of the data's. Names the graph lacks are ignored; a shape that differs
  // from the graph's is refused.
  NamedTensors<double> model_values;
  // Weights training leaves as they are: the model's constants, not its parameters.
  std::set<std::string> fixed_weights;
  // Operators whose outputs are computed again for the backward pass instead of kept (a plan's).
  std::vector<pcg::NodeId> recompute;
  // Operators without a hand-written kernel run compiled from their specs (false: interpreted).
  bool compile_from_specs = true;
  // A plan's pipeline. With more than one micro-batch, each step cuts the batch into them and runs
  // the graph made for one (search::micro_batch_graph); each process runs its passes in its
  // stage's order (search::stage_steps, as the simulator orders them), every process in one order
  // when an operator has pieces in several stages; the loss and gradients are the whole batch's
  // (each micro-batch's share weighted by its size) and one optimizer step follows the last pass.
  search::Pipeline pipeline;
  // The step (1-based, counting those before a resume) whose work every process records span by
  // span into TrainReport::trace (0: none). The processes meet once before it, so that their
  // clocks start together.
  std::int64_t trace_step = 0;
};

struct StepReport {
  std::int64_t step = 0;  // 1-based
  std::int64_t steps = 0;
  double loss = 0;
  double seconds = 0;
};

struct TrainReport {
  std::vector<double> losses;    // one per step of the run, resumed steps included
  std::int64_t first_step = 0;   // steps already done when this process started (resume)
  double seconds_per_step = 0;   // mean over the steps this process timed
  std::int64_t timed_steps = 0;  // the steps this process ran after its warm-up steps
  std::int64_t samples_per_step = 0;
  NamedTensors<double> weights;              // final values, a folded weight's by its parts
  std::vector<std::string> compiled_ops;     // operators without a native kernel, compiled from their specs
  std::vector<std::string> interpreted_ops;  // operators without a native kernel, run by the interpreter
  // Per node, this process's task time over the timed steps; a weight's node, the optimizer's
  // updates of it.
  std::vector<OperatorTime> operator_times;
  // The most bytes of activations this process held at once (ShardedExecutor::peak_activation_bytes).
  std::size_t peak_activation_bytes = 0;
  // The spans of TrainSettings::trace_step, every process's, each on its rank's row (StepTrace).
  std::vector<search::TraceSpan> trace;
};

// `transport`: the processes of a distributed run (none: one process runs every task). Only
// rank 0 writes checkpoints. `kernels`: the registry to run (none: builtin_kernels()).
// Throws LoomError: a graph the library cannot run, a process count other than the plan's, a data
// or checkpoint problem, a trace step outside the steps the run takes, or a non-finite loss (naming
// the step and the first operator whose output went non-finite).
template <class T>
TrainReport train(const spec::Library& library, const pcg::Graph& graph, const TrainSettings& settings,
                  const std::function<void(const StepReport&)>& progress = {}, Transport* transport = nullptr,
                  const KernelRegistry* kernels = nullptr);

}  // namespace loom::runtime
