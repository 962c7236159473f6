#include "loom/runtime/task_measurement.hpp"

#include <chrono>
#include <set>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/data.hpp"
#include "loom/runtime/initializer.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "loom/runtime/sharded_executor.hpp"
#include "loom/runtime/transport.hpp"

namespace loom::runtime {

std::optional<search::MeasuredTask> LocalTaskMeasurer::measure(const pcg::Node& node, const std::vector<pcg::ParallelShape>& inputs) {
  pcg::Graph graph;
  std::vector<pcg::PortRef> ports;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    ports.push_back({graph.add_input("input" + std::to_string(i), pcg::ParallelShape::unpartitioned(inputs[i].piece_dims())), 0});
  pcg::NodeId task;
  try {
    task = graph.add_node(library_, node.op, node.attrs, ports, "task");
  } catch (const LoomError&) {
    return std::nullopt;
  }
  for (std::size_t k = 0; k < graph.node(task).output_shapes.size(); ++k) graph.mark_output({task, static_cast<int>(k)});

  std::set<std::string> differentiable;
  for (pcg::PortRef in : ports) {
    const InputRole role = input_role(library_, graph, in.node);
    if (role == InputRole::Data || role == InputRole::Matrix) differentiable.insert(graph.node(in.node).name);
  }
  LocalTransport transport;
  std::optional<ShardedExecutor<float>> executor;
  try {
    executor.emplace(library_, graph, builtin_kernels(), transport, differentiable, 1, Backend::Cpu, settings_.compile_from_specs);
  } catch (const LoomError&) {
    return std::nullopt;
  }
  const NamedTensors<float> feeds = convert<float>(synthetic_data(library_, graph, LossKind::MeanSquaredError, 1, 1)->batch(0).inputs);
  std::vector<Tensor<float>> output_grads;
  for (pcg::PortRef out : graph.outputs()) {
    Tensor<float> ones(graph.shape_of(out).dims);
    for (float& v : ones.data) v = 1;
    output_grads.push_back(std::move(ones));
  }
  const bool backward = !differentiable.empty();
  auto run = [&] {
    executor->forward(feeds);
    if (backward) executor->backward(output_grads);
  };
  run();
  executor->restart_operator_times();
  const auto start = std::chrono::steady_clock::now();
  for (int runs = 0; runs < settings_.max_runs; ++runs) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (runs >= settings_.min_runs && elapsed >= settings_.min_seconds) break;
    run();
  }
  const OperatorTime& time = executor->operator_times()[task.index()];
  search::MeasuredTask measured;
  measured.forward_seconds = time.forward_per_task();
  measured.samples = time.forward_tasks;
  if (time.backward_tasks > 0) measured.backward_seconds = time.backward_per_task();
  return measured;
}

}  // namespace loom::runtime
