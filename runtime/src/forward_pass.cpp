#include "loom/runtime/forward_pass.hpp"

#include <chrono>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/checkpoint.hpp"
#include "loom/runtime/model_values.hpp"
#include "loom/runtime/sharded_executor.hpp"

namespace loom::runtime {
namespace {

template <class T>
NamedTensors<T> weights_for(const spec::Library& library, const pcg::Graph& graph, const ForwardSettings& s) {
  if (s.checkpoint.empty()) return convert<T>(starting_weights(library, graph, s.seed, s.model_values));
  return checkpointed_weights(s.checkpoint, graph, FoldedWeights(library, graph), convert<T>(checkpoint_weights(s.checkpoint)));
}

// The graph's inputs with their values: the settings' where given, else the model's.
NamedTensors<double> input_values(const pcg::Graph& graph, const ForwardSettings& s) {
  NamedTensors<double> values = model_values_of(graph, s.model_values, pcg::kInputOp);
  std::vector<std::string> missing, names;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.op != pcg::kInputOp) continue;
    const std::vector<std::int64_t>& dims = n.output_shapes.front().dims;
    names.push_back(n.name + " " + spec::dims_to_string(dims));
    auto given = s.inputs.find(n.name);
    if (given == s.inputs.end()) {
      if (!values.count(n.name)) missing.push_back("'" + n.name + "' " + spec::dims_to_string(dims));
      continue;
    }
    if (given->second.dims != dims) {
      auto file = s.input_files.find(n.name);
      throw LoomError((file == s.input_files.end() ? std::string() : file->second + ": ") + "input '" + n.name + "' is " +
                      spec::dims_to_string(dims) + " in the model, but " +
                      (file == s.input_files.end() ? "its value is " : "the file holds ") + spec::dims_to_string(given->second.dims));
    }
    values.insert_or_assign(n.name, given->second);
  }
  for (const auto& [name, value] : s.inputs) {
    if (values.count(name)) continue;
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    auto file = s.input_files.find(name);
    throw LoomError((file == s.input_files.end() ? std::string() : file->second + ": ") + "'" + name +
                    "' is no input of the model (its inputs: " + (list.empty() ? "none" : list) + ")");
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += (list.empty() ? "" : ", ") + m;
    throw LoomError("no value for the model's input" + std::string(missing.size() > 1 ? "s " : " ") + list);
  }
  return values;
}

}  // namespace

template <class T>
ForwardReport<T> forward_pass(const spec::Library& library, const pcg::Graph& graph, const ForwardSettings& s, Transport* transport,
                              const KernelRegistry* kernels) {
  LocalTransport single;
  Transport& comm = transport ? *transport : single;
  NamedValues<T> feeds = to_values(weights_for<T>(library, graph, s));
  for (auto& [name, value] : input_values(graph, s)) feeds.insert_or_assign(name, Value<T>(convert<T>(value)));
  ShardedExecutor<T> executor(library, graph, kernels ? *kernels : builtin_kernels(), comm, {},
                              s.plan_devices > 0 ? static_cast<int>(s.plan_devices) : devices_used(graph), s.backend, s.compile_from_specs);
  ForwardReport<T> report;
  report.compiled_ops = executor.operators_running(KernelRoute::Compiled);
  report.interpreted_ops = executor.operators_running(KernelRoute::Interpreted);
  const auto start = std::chrono::steady_clock::now();
  executor.forward(feeds);
  for (std::size_t i = 0; i < graph.outputs().size(); ++i) report.outputs.push_back(executor.output(i));
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

template ForwardReport<float> forward_pass<float>(const spec::Library&, const pcg::Graph&, const ForwardSettings&, Transport*,
                                                  const KernelRegistry*);
template ForwardReport<double> forward_pass<double>(const spec::Library&, const pcg::Graph&, const ForwardSettings&, Transport*,
                                                    const KernelRegistry*);

}  // namespace loom::runtime
