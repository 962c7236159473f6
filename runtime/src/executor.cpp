#include "loom/runtime/executor.hpp"

#include "loom/interpreter/program.hpp"
#include "loom/runtime/interpreter_kernel.hpp"

namespace loom::runtime {
namespace {

template <class T>
void accumulate(Tensor<T>& into, Tensor<T>&& add) {
  if (into.data.empty()) {
    into = std::move(add);
    return;
  }
  for (std::size_t i = 0; i < into.data.size(); ++i) into.data[i] += add.data[i];
}

}  // namespace

template <class T>
Executor<T>::Executor(const spec::Library& library, const pcg::Graph& graph, const KernelRegistry& kernels,
                      Collectives& collectives, std::set<std::string> differentiable, Backend backend)
    : graph_(graph), collectives_(collectives), differentiable_(std::move(differentiable)), runs_(graph.size()) {
  for (const pcg::Node& n : graph.nodes()) {
    NodeRun& run = runs_[static_cast<std::size_t>(n.id)];
    if (n.is_graph_input()) {
      run.differentiated = differentiable_.count(n.name) > 0;
      continue;
    }
    for (pcg::PortRef in : n.inputs) run.differentiated = run.differentiated || runs_[static_cast<std::size_t>(in.node)].differentiated;
    if (const auto* form = library.find_parallel(n.op)) {
      run.parallel = true;
      run.lowers_to = form->lowers_to;
    } else if (const auto* fused = library.find_fused(n.op)) {
      run.parallel = true;
      run.lowers_to = fused->lowers_to;
    } else if (const Kernel<T>* native = kernels.find<T>(n.op, backend)) {
      run.kernel = *native;
      run.native = true;
    } else {
      std::vector<std::vector<std::int64_t>> dims;
      for (pcg::PortRef in : n.inputs) dims.push_back(graph.shape_of(in).dims);
      try {
        run.kernel = interpreter_kernel<T>(library, n.op, n.attrs, dims);
      } catch (const LoomError& e) {
        throw LoomError(n.describe() + ": " + e.what());
      }
    }
  }
}

template <class T>
OpCall<T> Executor<T>::call_of(const pcg::Node& node) const {
  OpCall<T> call{node.op, node.attrs, {}};
  for (pcg::PortRef in : node.inputs) call.inputs.push_back(ports_[static_cast<std::size_t>(in.node)][static_cast<std::size_t>(in.port)]);
  return call;
}

template <class T>
ParallelTransfer Executor<T>::transfer_of(const pcg::Node& node, bool backward) const {
  return {&node, runs_[static_cast<std::size_t>(node.id)].lowers_to, graph_.shape_of(node.inputs.at(0)), node.output_shapes.at(0),
          backward};
}

template <class T>
void Executor<T>::forward(const NamedTensors<T>& feeds) {
  owned_.assign(graph_.size(), {});
  ports_.assign(graph_.size(), {});
  for (const pcg::Node& n : graph_.nodes()) {
    const auto id = static_cast<std::size_t>(n.id);
    if (n.is_graph_input()) {
      auto it = feeds.find(n.name);
      if (it == feeds.end()) throw LoomError(n.describe() + ": no value given");
      if (it->second.dims != n.output_shapes.front().dims)
        throw LoomError(n.describe() + ": the value has shape " + spec::dims_to_string(it->second.dims) + ", the graph expects " +
                        spec::dims_to_string(n.output_shapes.front().dims));
      ports_[id].push_back(&it->second);
      continue;
    }
    const NodeRun& run = runs_[id];
    if (run.parallel) {
      Tensor<T> moved = *ports_[static_cast<std::size_t>(n.inputs.at(0).node)][static_cast<std::size_t>(n.inputs.at(0).port)];
      collectives_.transfer(transfer_of(n, false), moved);
      owned_[id].push_back(std::move(moved));
    } else {
      try {
        owned_[id] = run.kernel.forward(call_of(n));
      } catch (const LoomError& e) {
        throw LoomError(n.describe() + ": " + e.what());
      }
    }
    for (const Tensor<T>& t : owned_[id]) ports_[id].push_back(&t);
  }
}

template <class T>
const Tensor<T>& Executor<T>::value(pcg::PortRef port) const {
  return *ports_.at(static_cast<std::size_t>(port.node)).at(static_cast<std::size_t>(port.port));
}

template <class T>
NamedTensors<T> Executor<T>::backward(const std::vector<Tensor<T>>& output_grads) {
  if (output_grads.size() != graph_.outputs().size())
    throw LoomError("backward: " + std::to_string(output_grads.size()) + " output gradients for " +
                    std::to_string(graph_.outputs().size()) + " graph outputs");
  std::vector<std::vector<Tensor<T>>> grads(graph_.size());
  for (const pcg::Node& n : graph_.nodes()) grads[static_cast<std::size_t>(n.id)].resize(std::max<std::size_t>(n.output_shapes.size(), 1));
  for (std::size_t i = 0; i < output_grads.size(); ++i) {
    const pcg::PortRef o = graph_.outputs()[i];
    accumulate(grads[static_cast<std::size_t>(o.node)][static_cast<std::size_t>(o.port)], Tensor<T>(output_grads[i]));
  }
  NamedTensors<T> result;
  for (auto it = graph_.nodes().rbegin(); it != graph_.nodes().rend(); ++it) {
    const pcg::Node& n = *it;
    const auto id = static_cast<std::size_t>(n.id);
    if (!runs_[id].differentiated) continue;
    std::vector<Tensor<T>>& out_grads = grads[id];
    if (n.is_graph_input()) {
      Tensor<T> g = std::move(out_grads[0]);
      if (g.data.empty()) g = Tensor<T>(n.output_shapes[0].dims, T(0));
      result.emplace(n.name, std::move(g));
      continue;
    }
    bool any = false;
    for (std::size_t p = 0; p < out_grads.size(); ++p) {
      if (!out_grads[p].data.empty()) {
        any = true;
      } else {
        out_grads[p] = Tensor<T>(ports_[id][p]->dims, T(0));
      }
    }
    if (!any) continue;
    std::vector<Tensor<T>> input_grads;
    if (runs_[id].parallel) {
      collectives_.transfer(transfer_of(n, true), out_grads[0]);
      input_grads.push_back(std::move(out_grads[0]));
    } else {
      const OpCall<T> call = call_of(n);
      GradCall<T> g{call, {}, {}, {}};
      for (std::size_t p = 0; p < out_grads.size(); ++p) {
        g.outputs.push_back(ports_[id][p]);
        g.output_grads.push_back(&out_grads[p]);
      }
      for (pcg::PortRef in : n.inputs) g.wanted.push_back(runs_[static_cast<std::size_t>(in.node)].differentiated);
      try {
        input_grads = runs_[id].kernel.backward(g);
      } catch (const LoomError& e) {
        throw LoomError(n.describe() + " (backward): " + e.what());
      }
    }
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const pcg::PortRef in = n.inputs[i];
      if (!runs_[static_cast<std::size_t>(in.node)].differentiated || input_grads.at(i).data.empty()) continue;
      accumulate(grads[static_cast<std::size_t>(in.node)][static_cast<std::size_t>(in.port)], std::move(input_grads[i]));
    }
    out_grads.clear();
  }
  for (const std::string& name : differentiable_) {
    if (result.count(name)) continue;
    if (auto id = graph_.find(name)) result.emplace(name, Tensor<T>(graph_.node(*id).output_shapes[0].dims, T(0)));
  }
  return result;
}

template <class T>
std::optional<int> Executor<T>::first_non_finite() const {
  for (const pcg::Node& n : graph_.nodes()) {
    if (n.is_graph_input()) continue;
    for (const Tensor<T>* t : ports_.at(static_cast<std::size_t>(n.id)))
      if (!all_finite(*t)) return n.id;
  }
  return std::nullopt;
}

template <class T>
std::vector<int> Executor<T>::interpreted_nodes() const {
  std::vector<int> ids;
  for (const pcg::Node& n : graph_.nodes())
    if (!n.is_graph_input() && !runs_[static_cast<std::size_t>(n.id)].parallel && !runs_[static_cast<std::size_t>(n.id)].native)
      ids.push_back(n.id);
  return ids;
}

template class Executor<float>;
template class Executor<double>;

}  // namespace loom::runtime
