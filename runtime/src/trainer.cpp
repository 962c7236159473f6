#include "loom/runtime/trainer.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <string_view>

#include "loom/runtime/checkpoint.hpp"
#include "loom/runtime/data.hpp"
#include "loom/runtime/folded_weights.hpp"
#include "loom/runtime/initializer.hpp"
#include "loom/runtime/microbatches.hpp"
#include "loom/runtime/model_values.hpp"
#include "loom/search/output_loss.hpp"
#include "loom/search/pipeline.hpp"
#include "loom/search/plan.hpp"
#include "sharded_steps.hpp"

namespace loom::runtime {
namespace {

std::string describe_run(const TrainSettings& s) {
  return s.run_name + ", loss " + loss_name(s.loss) + ", optimizer " + optimizer_name(s.optimizer.kind) + ", seed " +
         std::to_string(s.seed);
}

template <class T>
Checkpoint<T> starting_point(const spec::Library& library, const pcg::Graph& graph, const FoldedWeights& folds, const TrainSettings& s) {
  if (s.resume.empty()) return {describe_run(s), 0, {}, convert<T>(starting_weights(library, graph, s.seed, s.model_values)), {}};
  Checkpoint<T> c = load_checkpoint<T>(s.resume);
  if (c.run != describe_run(s))
    throw LoomError(s.resume + ": the checkpoint is of another run (" + c.run + "); this run is " + describe_run(s));
  c.weights = checkpointed_weights(s.resume, graph, folds, std::move(c.weights));
  c.optimizer.first_moment = folds.folded(std::move(c.optimizer.first_moment));
  c.optimizer.second_moment = folds.folded(std::move(c.optimizer.second_moment));
  return c;
}

}  // namespace

namespace {

// The loss of one pass over a batch or micro-batch, on this process, with the gradients of the
// graph's outputs that backward() takes; the loss and gradients weighted by `weight`.
template <class T>
struct LossTaken {
  double loss = 0;  // this process's share
  std::vector<std::vector<Tensor<T>>> piece_grads;
};

template <class T>
void scale(Tensor<T>& t, double weight) {
  if (weight == 1) return;
  for (T& v : t.data) v = static_cast<T>(v * weight);
}

template <class T>
void add_gradients(NamedValues<T>& sum, NamedValues<T>&& more) {
  for (auto& [name, value] : more) add_into(sum[name], std::move(value));
}

}  // namespace

template <class T>
TrainReport train(const spec::Library& library, const pcg::Graph& graph, const TrainSettings& s,
                  const std::function<void(const StepReport&)>& progress, Transport* transport, const KernelRegistry* kernels) {
  LocalTransport single;
  Transport& comm = transport ? *transport : single;
  if (graph.outputs().empty()) throw LoomError("the graph has no output to take the loss of");

  // A checkpoint and the report keep the model's own weights, whichever plan ran.
  const FoldedWeights folds(library, graph);
  Checkpoint<T> state = starting_point<T>(library, graph, folds, s);
  if (s.trace_step != 0 && state.step >= s.steps)
    throw LoomError("no step is left to trace: the run resumes after step " + std::to_string(state.step) + " of " +
                    std::to_string(s.steps));
  if (s.trace_step != 0 && (s.trace_step <= state.step || s.trace_step > s.steps))
    throw LoomError("the step to trace, " + std::to_string(s.trace_step) + ", is not among the steps this run takes (" +
                    std::to_string(state.step + 1) + " to " + std::to_string(s.steps) + ")");
  std::set<std::string> trainable = trainable_weights(library, graph);
  for (const std::string& name : search::fixed_weights_in(graph, s.fixed_weights)) trainable.erase(name);
  // Inputs whose values the model fixes, fed as the model gives them in place of the data's.
  NamedTensors<T> fixed_inputs = convert<T>(model_values_of(graph, s.model_values, pcg::kInputOp));
  // A pipelined plan runs the graph of one micro-batch, once per micro-batch, each in an executor
  // of its own that keeps the micro-batch's values from its forward pass to its backward.
  const int microbatches = std::max(1, s.pipeline.microbatches);
  const bool pipelined = s.pipeline.runs_micro_batches();
  const pcg::Graph micro = pipelined ? search::micro_batch_graph(graph, library, microbatches) : pcg::Graph{};
  const pcg::Graph& run_graph = pipelined ? micro : graph;
  const int devices = s.plan_devices > 0 ? static_cast<int>(s.plan_devices) : devices_used(graph);
  std::vector<std::unique_ptr<ShardedExecutor<T>>> executors;
  for (int m = 0; m < microbatches; ++m) {
    executors.push_back(std::make_unique<ShardedExecutor<T>>(library, run_graph, kernels ? *kernels : builtin_kernels(), comm, trainable,
                                                             devices, s.backend, s.compile_from_specs));
    executors.back()->recompute(s.recompute);
    executors.back()->count_activations_with(*executors.front());
    executors.back()->use_message_channel(m % Transport::kChannels);
    executors.back()->sum_gradients_later(pipelined);
  }
  ShardedExecutor<T>& executor = *executors.front();
  const auto data = s.data_file.empty() ? synthetic_data(library, graph, s.loss, s.seed, s.synthetic_batches)
                                        : load_data_file(s.data_file, graph, s.loss);
  Optimizer<T> optimizer(s.optimizer, std::move(state.optimizer));
  const pcg::PortRef out = graph.outputs().front();
  const bool probabilities = search::output_is_probabilities(library, graph);
  // Each process takes the loss of the output boxes it holds, and one sum of a number makes it
  // whole; cross-entropy over logits whose class axis is split among processes first has them share
  // their rows' statistics.
  const std::vector<std::int64_t> out_dims = run_graph.shape_of(out).dims;
  const bool rows_shared = search::shares_row_statistics(s.loss, executor.output_layout(0), probabilities);
  if (pipelined && (out_dims.empty() || out_dims.front() * microbatches != graph.shape_of(out).dims.front()))
    throw LoomError("the pipeline's " + std::to_string(microbatches) + " micro-batches do not cut the output " +
                    graph.node(out.node).describe() + " along its first dimension, so its loss cannot be taken per micro-batch");
  // Each process runs its stage's order where the transport sends ahead and no operator spans
  // stages (search::runs_in_one_order), so the output's holders, sharing their rows' statistics,
  // lie in one stage.
  const std::vector<search::PipelineStep> passes = pipelined ? process_passes(run_graph, s.pipeline, comm.rank(), comm.size(), devices,
                                                                              !comm.can_send_ahead(), executor.values_taking_gradients())
                                                             : std::vector<search::PipelineStep>{};
  // A pipeline whose data goes round its stages runs each micro-batch's forward pass lap by lap.
  const std::vector<int> laps = pipelined ? search::pipeline_laps(run_graph, s.pipeline.stages, devices) : std::vector<int>{};
  const int last_lap = laps.empty() ? 0 : *std::max_element(laps.begin(), laps.end());
  // Sending ahead while the pipeline runs, each micro-batch on its channel; the transport is left as
  // it was found, whatever ends the run.
  struct PipelineTransport {
    Transport& comm;
    bool on;
    PipelineTransport(Transport& c, bool pipelined) : comm(c), on(pipelined) {
      if (on) comm.send_ahead(true);
    }
    ~PipelineTransport() {
      if (!on) return;
      comm.use_channel(0);
      comm.send_ahead(false);
    }
    PipelineTransport(const PipelineTransport&) = delete;
    PipelineTransport& operator=(const PipelineTransport&) = delete;
  } pipeline_transport(comm, pipelined);

  StepTrace trace;
  trace.name_microbatches(pipelined);
  if (s.trace_step != 0)
    for (std::size_t m = 0; m < executors.size(); ++m) executors[m]->trace_into(&trace, static_cast<int>(m));

  TrainReport report;
  report.first_step = state.step;
  report.losses = state.losses;
  report.samples_per_step = graph.shape_of(out).dims.empty() ? 1 : graph.shape_of(out).dims.front();
  report.compiled_ops = executor.operators_running(KernelRoute::Compiled);
  report.interpreted_ops = executor.operators_running(KernelRoute::Interpreted);

  // Weights, fixed inputs and the batch's inputs, where the backend keeps them between steps.
  NamedValues<T> feeds = to_values(std::move(state.weights));
  for (auto& [name, value] : fixed_inputs) feeds.insert_or_assign(name, Value<T>(std::move(value)));
  double total_seconds = 0;
  std::map<std::string, OperatorTime> update_times;  // by weight, over the timed steps
  // Each process updates the weights exactly only where it reads them: a checkpoint and the report
  // take each box from a process that reads it.
  const auto whole = [&](NamedTensors<T> values) {
    NamedValues<T> held = to_values(std::move(values));
    executor.assemble(held);
    return to_host(held);
  };
  const auto save = [&](std::int64_t done) {
    const NamedTensors<T> weights = whole(to_host(feeds));
    OptimizerState<T> state = optimizer.state();
    // A process keeps the moments of the weights it updates alone (a pipeline's stage, its own):
    // the others' are zero here, and every process assembles the same ones.
    if (s.optimizer.kind == OptimizerKind::Adam)
      for (const std::string& name : trainable)
        for (NamedTensors<T>* moments : {&state.first_moment, &state.second_moment})
          moments->try_emplace(name, Tensor<T>(graph.node(*graph.find(name)).output_shapes[0].dims, T(0)));
    state.first_moment = folds.by_parts(whole(std::move(state.first_moment)));
    state.second_moment = folds.by_parts(whole(std::move(state.second_moment)));
    if (comm.rank() == 0) save_checkpoint<T>(s.checkpoint, {describe_run(s), done, report.losses, folds.by_parts(weights), state});
  };
  // The loss of the pass `ex` has just run forward, its target `target`, weighted by `weight`.
  const std::vector<search::RowStatisticsGroup> row_groups =
      rows_shared ? search::row_statistics_groups(executor.output_layout(0), executor.output_ranks(0))
                  : std::vector<search::RowStatisticsGroup>{};
  const auto take_loss = [&](ShardedExecutor<T>& ex, const Tensor<double>& target, double weight) {
    LossTaken<T> taken;
    taken.piece_grads.resize(graph.outputs().size());
    std::vector<HeldBox<T>> boxes;
    for (const auto& piece : ex.output_pieces(0)) boxes.push_back({piece.box, &piece.value->host()});
    std::vector<double> rows;
    if (rows_shared && !boxes.empty()) {
      rows = row_statistics(boxes, out_dims);
      for (const search::RowStatisticsGroup& group : row_groups) {
        if (!std::binary_search(group.devices.begin(), group.devices.end(), comm.rank())) continue;
        std::vector<double> shared = statistics_of_rows(rows, group.rows, out_dims);
        comm.all_gather(shared, group.devices);
        put_statistics_of_rows(rows, group.rows, out_dims, combined_row_statistics(shared, group.rows.elements()));
      }
    }
    LossShare<T> share = loss_of_boxes<T>(s.loss, boxes, out_dims, target, probabilities, rows.empty() ? nullptr : &rows);
    taken.loss = share.loss * weight;
    for (Tensor<T>& grad : share.grads) {
      scale(grad, weight);
      taken.piece_grads[0].push_back(std::move(grad));
    }
    for (std::size_t i = 1; i < graph.outputs().size(); ++i)
      for (const auto& piece : ex.output_pieces(i)) taken.piece_grads[i].emplace_back(piece.value->dims(), T(0));
    return taken;
  };
  const auto backward = [&](ShardedExecutor<T>& ex, LossTaken<T>&& taken) { return ex.backward_from_pieces(std::move(taken.piece_grads)); };
  // The whole loss from this process's share.
  const auto whole_loss = [&](double mine) {
    std::vector<double> total{mine};
    comm.sum(total);
    return total[0];
  };
  const auto refuse_non_finite = [&](std::int64_t step, double loss, const std::string& where) {
    throw LoomError("step " + std::to_string(step + 1) + ": the loss is " + std::to_string(loss) + "; " + where);
  };
  // A pipelined step's micro-batches: their rows of the inputs the micro-batch graph cuts, which
  // their executors read (the weights from `feeds`) until their backward.
  std::vector<NamedValues<T>> micro_feeds(static_cast<std::size_t>(microbatches));
  std::vector<LossTaken<T>> micro_losses(static_cast<std::size_t>(microbatches));
  std::set<std::string> cut_inputs;
  if (pipelined)
    for (const pcg::Node& n : graph.nodes())
      if (n.op == pcg::kInputOp && run_graph.node(n.id).output_shapes != n.output_shapes) cut_inputs.insert(n.name);
  const std::int64_t to_run = std::max<std::int64_t>(0, s.steps - report.first_step);
  const std::int64_t timed_from = report.first_step + (to_run > s.warmup_steps ? std::max<std::int64_t>(0, s.warmup_steps) : 0);
  for (std::int64_t step = report.first_step; step < s.steps; ++step) {
    if (step == timed_from) {
      for (auto& ex : executors) ex->restart_operator_times();
      update_times.clear();
    }
    const bool traced = step + 1 == s.trace_step;
    if (traced) {
      std::vector<double> meeting{0};
      comm.sum(meeting);
      trace.start();
    }
    const auto start = std::chrono::steady_clock::now();
    const Batch& batch = data->batch(step);
    for (auto& [name, value] : batch.inputs)
      if (!fixed_inputs.count(name)) feeds.insert_or_assign(name, Value<T>(convert<T>(value)));
    double loss = 0;
    NamedValues<T> grads;
    if (!pipelined) {
      executor.forward(feeds);
      const auto loss_start = StepTrace::Clock::now();
      LossTaken<T> taken = take_loss(executor, batch.target, 1.0);
      loss = whole_loss(taken.loss);
      trace.add(TracedWork::Loss, pcg::kNoNode, -1, 0, loss_start);
      if (!std::isfinite(loss)) {
        const auto bad = executor.first_non_finite();
        refuse_non_finite(step, loss,
                          bad ? "the first operator whose output went non-finite is " + graph.node(*bad).describe()
                              : std::string("every operator's output is finite (the loss itself overflowed)"));
      }
      grads = backward(executor, std::move(taken));
    } else {
      const double weight = 1.0 / microbatches;
      double mine = 0;
      for (const search::PipelineStep& pass : passes) {
        const int m = pass.microbatch;
        const auto i = static_cast<std::size_t>(m);
        if (pass.backward) {
          NamedValues<T> micro_grads = backward(*executors[i], std::move(micro_losses[i]));
          const auto adding_start = StepTrace::Clock::now();
          add_gradients(grads, std::move(micro_grads));
          trace.add(TracedWork::GradientsAddedUp, pcg::kNoNode, -1, m, adding_start);
          micro_feeds[i].clear();
          continue;
        }
        if (pass.lap == 0) {
          micro_feeds[i].clear();
          for (const std::string& name : cut_inputs)
            if (auto fed = feeds.find(name); fed != feeds.end())
              micro_feeds[i].emplace(name, Value<T>(batch_rows(fed->second.host(), m, microbatches)));
        }
        executors[i]->forward_lap(feeds, &micro_feeds[i], laps, pass.lap);
        if (pass.lap < last_lap) continue;
        const auto loss_start = StepTrace::Clock::now();
        micro_losses[i] = take_loss(*executors[i], batch_rows(batch.target, m, microbatches), weight);
        trace.add(TracedWork::Loss, pcg::kNoNode, -1, m, loss_start);
        mine += micro_losses[i].loss;
      }
      comm.finish_sends();
      comm.use_channel(0);
      executor.sum_gradients(grads);
      loss = whole_loss(mine);
      if (!std::isfinite(loss))
        refuse_non_finite(step, loss,
                          "a micro-batch's values are freed once its backward pass has run: train the plan without its pipeline "
                          "to find the first operator whose output went non-finite");
    }
    std::map<std::string, double> update_seconds;
    const auto update_start = StepTrace::Clock::now();
    optimizer.step(feeds, grads, executor.exact_elements(), &update_seconds);
    trace.add(TracedWork::Update, pcg::kNoNode, -1, 0, update_start);
    for (const auto& [name, seconds] : update_seconds) {
      update_times[name].update_seconds += seconds;
      ++update_times[name].updates;
    }
    // A step's time includes the device work it queued.
    finish_devices(feeds);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (traced) {
      trace.stop();
      report.trace = trace.gather(run_graph, comm);
    }
    if (step >= timed_from) total_seconds += seconds;
    report.losses.push_back(loss);
    if (progress) progress({step + 1, s.steps, loss, seconds});
    if (!s.checkpoint.empty() && s.checkpoint_every > 0 && (step + 1) % s.checkpoint_every == 0) save(step + 1);
  }
  if (!s.checkpoint.empty()) save(std::max(s.steps, report.first_step));
  report.operator_times = executor.operator_times();
  for (std::size_t m = 1; m < executors.size(); ++m)
    for (std::size_t i = 0; i < report.operator_times.size(); ++i) {
      const OperatorTime& more = executors[m]->operator_times()[i];
      OperatorTime& sum = report.operator_times[i];
      sum.forward_seconds += more.forward_seconds;
      sum.backward_seconds += more.backward_seconds;
      sum.forward_tasks += more.forward_tasks;
      sum.backward_tasks += more.backward_tasks;
    }
  report.peak_activation_bytes = executor.peak_activation_bytes();
  for (const auto& [name, time] : update_times)
    if (const auto id = graph.find(name)) {
      report.operator_times.at(static_cast<std::size_t>(*id)).update_seconds = time.update_seconds;
      report.operator_times.at(static_cast<std::size_t>(*id)).updates = time.updates;
    }
  executor.assemble(feeds);
  report.timed_steps = std::max<std::int64_t>(0, s.steps - timed_from);
  report.seconds_per_step = report.timed_steps > 0 ? total_seconds / static_cast<double>(report.timed_steps) : 0;
  for (const pcg::Node& n : graph.nodes())
    if (n.op == pcg::kWeightOp) report.weights.emplace(n.name, convert<double>(feeds.at(n.name).host()));
  report.weights = folds.by_parts(std::move(report.weights));
  return report;
}

template TrainReport train<float>(const spec::Library&, const pcg::Graph&, const TrainSettings&,
                                  const std::function<void(const StepReport&)>&, Transport*, const KernelRegistry*);
template TrainReport train<double>(const spec::Library&, const pcg::Graph&, const TrainSettings&,
                                   const std::function<void(const StepReport&)>&, Transport*, const KernelRegistry*);

}  // namespace loom::runtime
