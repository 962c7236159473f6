#include "loom/runtime/trainer.hpp"

#include <chrono>
#include <map>
#include <string_view>

#include "loom/runtime/checkpoint.hpp"
#include "loom/runtime/data.hpp"
#include "loom/runtime/initializer.hpp"
#include "loom/runtime/model_values.hpp"

namespace loom::runtime {
namespace {

std::string describe_run(const TrainSettings& s) {
  return s.run_name + ", loss " + loss_name(s.loss) + ", optimizer " + optimizer_name(s.optimizer.kind) + ", seed " +
         std::to_string(s.seed);
}

template <class T>
Checkpoint<T> starting_point(const spec::Library& library, const pcg::Graph& graph, const TrainSettings& s) {
  if (s.resume.empty()) return {describe_run(s), 0, {}, convert<T>(starting_weights(library, graph, s.seed, s.model_values)), {}};
  Checkpoint<T> c = load_checkpoint<T>(s.resume);
  if (c.run != describe_run(s))
    throw LoomError(s.resume + ": the checkpoint is of another run (" + c.run + "); this run is " + describe_run(s));
  check_weights_fit(s.resume, c.weights, graph);
  return c;
}

}  // namespace

bool output_is_probabilities(const spec::Library& library, const pcg::Graph& graph) {
  // The operator that computed the output, behind the parallel operators that assembled it.
  pcg::PortRef made = graph.outputs().front();
  while (!graph.node(made.node).inputs.empty() &&
         (library.find_parallel(graph.node(made.node).op) || library.find_fused(graph.node(made.node).op)))
    made = graph.node(made.node).inputs.front();
  const spec::OpDecl* producer = library.find_op(graph.node(made.node).op);
  const auto port = static_cast<std::size_t>(made.port);
  return producer && port < producer->outputs.size() && producer->outputs[port].noted("probabilities");
}

template <class T>
TrainReport train(const spec::Library& library, const pcg::Graph& graph, const TrainSettings& s,
                  const std::function<void(const StepReport&)>& progress, Transport* transport, const KernelRegistry* kernels) {
  LocalTransport single;
  Transport& comm = transport ? *transport : single;
  if (graph.outputs().empty()) throw LoomError("the graph has no output to take the loss of");

  Checkpoint<T> state = starting_point<T>(library, graph, s);
  std::set<std::string> trainable = trainable_weights(library, graph);
  for (const std::string& name : s.fixed_weights) trainable.erase(name);
  // Inputs whose values the model fixes, fed as the model gives them in place of the data's.
  NamedTensors<T> fixed_inputs = convert<T>(model_values_of(graph, s.model_values, pcg::kInputOp));
  ShardedExecutor<T> executor(library, graph, kernels ? *kernels : builtin_kernels(), comm, trainable,
                              s.plan_devices > 0 ? static_cast<int>(s.plan_devices) : devices_used(graph), s.backend, s.compile_from_specs);
  const auto data = s.data_file.empty() ? synthetic_data(library, graph, s.loss, s.seed, s.synthetic_batches)
                                        : load_data_file(s.data_file, graph, s.loss);
  executor.recompute(s.recompute);
  Optimizer<T> optimizer(s.optimizer, std::move(state.optimizer));
  const pcg::PortRef out = graph.outputs().front();
  const bool probabilities = output_is_probabilities(library, graph);
  // Each process takes the loss of the output boxes it holds, and one sum of a number makes it
  // whole; only cross-entropy over a class axis split among devices needs the output assembled.
  const std::vector<std::int64_t> out_dims = graph.shape_of(out).dims;
  const bool loss_where_output_lies = s.loss == LossKind::MeanSquaredError || out_dims.empty() || executor.output_layout(0).D.back() == 1;

  TrainReport report;
  report.first_step = state.step;
  report.losses = state.losses;
  report.samples_per_step = graph.shape_of(out).dims.empty() ? 1 : graph.shape_of(out).dims.front();
  report.compiled_ops = executor.operators_running(KernelRoute::Compiled);
  report.interpreted_ops = executor.operators_running(KernelRoute::Interpreted);

  NamedTensors<T> feeds = std::move(state.weights);
  for (auto& [name, value] : fixed_inputs) feeds.insert_or_assign(name, std::move(value));
  double total_seconds = 0;
  std::map<std::string, OperatorTime> update_times;  // by weight, over the timed steps
  // Each process updates the weights exactly only where it reads them: a checkpoint and the report
  // take each box from a process that reads it.
  const auto whole_state = [&] {
    OptimizerState<T> state = optimizer.state();
    executor.assemble(state.first_moment);
    executor.assemble(state.second_moment);
    return state;
  };
  const auto save = [&](std::int64_t done) {
    NamedTensors<T> weights = feeds;
    executor.assemble(weights);
    const OptimizerState<T> state = whole_state();
    if (comm.rank() == 0) save_checkpoint<T>(s.checkpoint, {describe_run(s), done, report.losses, weights, state});
  };
  const std::int64_t to_run = std::max<std::int64_t>(0, s.steps - report.first_step);
  const std::int64_t timed_from = report.first_step + (to_run > s.warmup_steps ? std::max<std::int64_t>(0, s.warmup_steps) : 0);
  for (std::int64_t step = report.first_step; step < s.steps; ++step) {
    if (step == timed_from) {
      executor.restart_operator_times();
      update_times.clear();
    }
    const auto start = std::chrono::steady_clock::now();
    Batch batch = data->batch(step);
    for (auto& [name, value] : batch.inputs)
      if (!fixed_inputs.count(name)) feeds.insert_or_assign(name, convert<T>(value));
    executor.forward(feeds);
    double loss = 0;
    std::vector<std::vector<Tensor<T>>> piece_grads(graph.outputs().size());  // when the loss is taken where the output lies
    std::vector<Tensor<T>> whole_grads;                                       // when it is taken of the assembled output
    if (loss_where_output_lies) {
      for (const auto& piece : executor.output_pieces(0)) {
        LossValue<T> share = compute_loss<T>(s.loss, *piece.value, piece.box, out_dims, batch.target, probabilities);
        loss += share.loss;
        piece_grads[0].push_back(std::move(share.grad));
      }
      std::vector<double> total{loss};
      comm.sum(total);
      loss = total[0];
    } else {
      LossValue<T> whole = compute_loss<T>(s.loss, executor.output(0), batch.target, probabilities);
      loss = whole.loss;
      whole_grads.push_back(std::move(whole.grad));
    }
    if (!std::isfinite(loss)) {
      const auto bad = executor.first_non_finite();
      throw LoomError("step " + std::to_string(step + 1) + ": the loss is " + std::to_string(loss) + "; " +
                      (bad ? "the first operator whose output went non-finite is " + graph.node(*bad).describe()
                           : std::string("every operator's output is finite (the loss itself overflowed)")));
    }
    for (std::size_t i = 1; i < graph.outputs().size(); ++i) {
      if (loss_where_output_lies) {
        for (const auto& piece : executor.output_pieces(i)) piece_grads[i].emplace_back(piece.value->dims, T(0));
      } else {
        whole_grads.emplace_back(graph.shape_of(graph.outputs()[i]).dims, T(0));
      }
    }
    std::map<std::string, double> update_seconds;
    optimizer.step(feeds, loss_where_output_lies ? executor.backward_from_pieces(std::move(piece_grads)) : executor.backward(whole_grads),
                   executor.exact_elements(), &update_seconds);
    for (const auto& [name, seconds] : update_seconds) {
      update_times[name].update_seconds += seconds;
      ++update_times[name].updates;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (step >= timed_from) total_seconds += seconds;
    report.losses.push_back(loss);
    if (progress) progress({step + 1, s.steps, loss, seconds});
    if (!s.checkpoint.empty() && s.checkpoint_every > 0 && (step + 1) % s.checkpoint_every == 0) save(step + 1);
  }
  if (!s.checkpoint.empty()) save(std::max(s.steps, report.first_step));
  report.operator_times = executor.operator_times();
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
    if (n.op == pcg::kWeightOp) report.weights.emplace(n.name, convert<double>(feeds.at(n.name)));
  return report;
}

template TrainReport train<float>(const spec::Library&, const pcg::Graph&, const TrainSettings&,
                                  const std::function<void(const StepReport&)>&, Transport*, const KernelRegistry*);
template TrainReport train<double>(const spec::Library&, const pcg::Graph&, const TrainSettings&,
                                   const std::function<void(const StepReport&)>&, Transport*, const KernelRegistry*);

}  // namespace loom::runtime
