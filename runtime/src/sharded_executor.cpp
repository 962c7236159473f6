#include "loom/runtime/sharded_executor.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>

#include "collective_groups.hpp"
#include "loom/interpreter/input_roles.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/gradient_sums.hpp"
#include "loom/pcg/layout_fusion.hpp"
#include "loom/pcg/piece_moves.hpp"
#include "loom/pcg/task_layout.hpp"
#include "loom/runtime/interpreter_kernel.hpp"
#include "loom/runtime/memory_reuse.hpp"
#include "loom/search/gradient_flow.hpp"
#include "loom/search/memory.hpp"
#include "piece_regions.hpp"
#include "sharded_steps.hpp"

namespace loom::runtime {

template <class T>
ShardedExecutor<T>::ShardedExecutor(const spec::Library& library, const pcg::Graph& graph, const KernelRegistry& kernels,
                                    Transport& transport, std::set<std::string> differentiable, int devices, Backend backend,
                                    bool compile_from_specs)
    : graph_(graph),
      transport_(transport),
      differentiable_(std::move(differentiable)),
      devices_(devices),
      runs_(graph.size()),
      times_(graph.size()) {
  keep_freed_memory();
  if (transport.size() > 1 && transport.size() != devices)
    throw LoomError("the plan is for " + std::to_string(devices) + " devices, but " + std::to_string(transport.size()) +
                    " processes run it: start one process per device (mpirun -np " + std::to_string(devices) + ")");
  const auto view_of = [](const pcg::Node& n) { return n.view_or_default(); };
  const auto is_layout_change = [&library](const pcg::Node& n) { return library.find_parallel(n.op) || library.find_fused(n.op); };
  // One process runs no collectives, so it fuses no layout changes.
  const pcg::LayoutChangeSources fused = pcg::fuse_layout_changes(graph, is_layout_change, view_of, transport.size() > 1);
  const search::DetachedInput detached = [&library](const pcg::Node& n, std::size_t slot) {
    return spec::detached_input(library, n, slot);
  };
  const std::vector<bool> differentiated = search::gradient_flow(
      graph, [this](const pcg::Node& n) { return n.is_graph_input() && differentiable_.count(n.name) > 0; }, detached);
  freed_after_forward_ = search::freed_after_forward(graph, detached, differentiated);
  for (const pcg::Node& n : graph.nodes()) {
    NodeRun& run = runs_[n.id.index()];
    run.view = view_of(n);
    for (int d : run.view.devices) {
      if (d < 0 || d >= devices)
        throw LoomError(n.describe() + ": its machine view uses device " + std::to_string(d) + " of " + std::to_string(devices));
      if (transport.size() == 1 || d == transport.rank()) ++run.local_pieces;
    }
    run.differentiated = differentiated[n.id.index()];
    if (n.is_graph_input()) continue;
    for (std::size_t i = 0; i < n.inputs.size(); ++i) run.detached.push_back(spec::detached_input(library, n, i));
    if (is_layout_change(n)) {
      run.parallel = true;
      run.source = fused.source[n.id.index()];
      run.fused_away = fused.fused_away[n.id.index()];
      if (!run.fused_away) {
        run.moves = pcg::piece_moves(graph.shape_of(run.source), runs_[run.source.node.index()].view, n.output_shapes.at(0), run.view);
        run.collective = collective_groups_of(n, run.source, run.moves);
      }
      const pcg::PortRef in = run.source;
      run.replicates_input = graph.node(in.node).is_graph_input() && n.output_shapes.at(0).R == n.output_shapes.at(0).tasks();
    } else if (const Kernel<T>* native = kernels.find<T>(n.op, backend)) {
      run.kernel = *native;
    } else if (const Kernel<T>* cpu = kernels.find<T>(n.op, Backend::Cpu)) {
      run.kernel = *cpu;
    } else {
      std::vector<std::vector<std::int64_t>> dims, logical;
      for (pcg::PortRef in : n.inputs) {
        dims.push_back(piece_dims(graph.shape_of(in)));
        logical.push_back(graph.shape_of(in).dims);
      }
      try {
        run.kernel = interpreter_kernel<T>(library, n.op, n.attrs, dims, logical, compile_from_specs);
      } catch (const LoomError& e) {
        throw LoomError(n.describe() + ": " + e.what());
      }
    }
  }
  for (pcg::PortRef o : graph.outputs()) {
    NodeRun& run = runs_[o.node.index()];
    run.output_read_at_source = run.parallel && pcg::is_unread_output(graph, o.node, run.source);
  }
  sync_ = std::make_unique<GradientSync<T>>(
      graph, transport_,
      pcg::input_reads(graph, fused, is_layout_change, view_of, [this](const pcg::Node& n) { return differentiable_.count(n.name) > 0; }));
  const std::vector<bool> fed = search::made_from_graph_inputs(graph, [this](const pcg::Node& n) { return runs_[n.id.index()].parallel; });
  counted_.assign(fed.size(), false);
  for (std::size_t i = 0; i < fed.size(); ++i) counted_[i] = !fed[i];
  node_bytes_.assign(graph.size(), 0);
  recompute({});
}

template <class T>
std::vector<bool> ShardedExecutor<T>::values_taking_gradients() const {
  std::vector<bool> out;
  for (const NodeRun& run : runs_) out.push_back(run.differentiated);
  return out;
}

template <class T>
std::vector<pcg::NodeId> ShardedExecutor<T>::reads_of(const pcg::Node& n) const {
  const NodeRun& run = runs_[n.id.index()];
  if (!run.parallel) {
    std::vector<pcg::NodeId> nodes;
    for (pcg::PortRef in : n.inputs) nodes.push_back(in.node);
    return nodes;
  }
  if (run.fused_away || run.replicates_input) return {};
  return {run.source.node};
}

template <class T>
void ShardedExecutor<T>::recompute(const std::vector<pcg::NodeId>& operators) {
  dropped_.assign(graph_.size(), false);
  for (pcg::NodeId id : operators) {
    if (id.value() < 0 || id.index() >= graph_.size())
      throw LoomError("recompute: node " + std::to_string(id.value()) + " is not in the graph");
    const pcg::Node& n = graph_.node(id);
    if (n.is_graph_input() || runs_[id.index()].parallel) throw LoomError("recompute: " + n.describe() + " is not an operator");
    dropped_[id.index()] = true;
  }
  for (const pcg::Node& n : graph_.nodes()) {
    const NodeRun& run = runs_[n.id.index()];
    if (run.parallel) dropped_[n.id.index()] = !run.fused_away && !run.replicates_input && dropped_[run.source.node.index()];
  }
  for (std::size_t i = 0; i < graph_.outputs().size(); ++i) {
    dropped_[graph_.outputs()[i].node.index()] = false;
    dropped_[held_output(i).node.index()] = false;
  }
  regions_ = search::piecewise_regions(
      graph_, [this](const pcg::Node& n) { return runs_[n.id.index()].parallel; }, dropped_);
  region_of_.assign(graph_.size(), -1);
  for (std::size_t r = 0; r < regions_.size(); ++r)
    for (pcg::NodeId m : regions_[r]) region_of_[m.index()] = static_cast<int>(r);
  last_reader_.clear();
  for (const pcg::Node& n : graph_.nodes()) last_reader_.push_back(n.id);
  for (const pcg::Node& n : graph_.nodes())
    if (!n.is_graph_input() && !runs_[n.id.index()].output_read_at_source)
      for (pcg::NodeId read : reads_of(n)) last_reader_[read.index()] = n.id;
}

template <class T>
void ShardedExecutor<T>::recount(pcg::NodeId node) {
  const std::size_t id = node.index();
  std::size_t bytes = 0;
  const auto add = [&bytes](const std::vector<Pieces>& ports) {
    for (const Pieces& pieces : ports)
      for (const Value<T>& piece : pieces) bytes += piece.size() * sizeof(T);
  };
  if (counted_[id]) {
    if (id < values_.size()) add(values_[id]);
    if (id < grads_.size()) add(grads_[id]);
  }
  if (id < received_.size())
    for (std::size_t i = 0; i < received_[id].size(); ++i)
      if (counted_[graph_.node(node).inputs[i].node.index()])
        for (const Value<T>& piece : received_[id][i]) bytes += piece.size() * sizeof(T);
  meter_->live = meter_->live - node_bytes_[id] + bytes;
  node_bytes_[id] = bytes;
  meter_->peak = std::max(meter_->peak, meter_->live);
}

template <class T>
void ShardedExecutor<T>::release_dropped(pcg::NodeId node) {
  for (Pieces& pieces : values_[node.index()])
    for (Value<T>& piece : pieces) piece = Value<T>{};
  recount(node);
  for (pcg::NodeId reader : graph_.consumers(node)) {
    if (reader.index() >= received_.size()) continue;
    const pcg::Node& r = graph_.node(reader);
    for (std::size_t i = 0; i < r.inputs.size() && i < received_[reader.index()].size(); ++i)
      if (r.inputs[i].node == node)
        for (Value<T>& piece : received_[reader.index()][i]) piece = Value<T>{};
    recount(reader);
  }
}

template <class T>
void ShardedExecutor<T>::restore(pcg::NodeId node) {
  if (!dropped_[node.index()] || restored_[node.index()]) return;
  restored_[node.index()] = true;
  const pcg::Node& n = graph_.node(node);
  for (pcg::NodeId read : reads_of(n)) restore(read);
  const bool recomputing = recomputing_;
  recomputing_ = true;
  if (runs_[node.index()].parallel) {
    trace_working_on(node, true);
    const auto begin = StepTrace::Clock::now();
    move_pieces(n);
    trace_span(TracedWork::Recompute, node, -1, begin);
  } else {
    run_operator(n);
  }
  recomputing_ = recomputing;
  recount(node);
}

template <class T>
void ShardedExecutor<T>::restore_for_backward(const pcg::Node& n) {
  if (dropped_[n.id.index()]) {
    restore(n.id);
    return;
  }
  bool read_dropped = false;
  for (pcg::PortRef in : n.inputs)
    if (dropped_[in.node.index()]) {
      restore(in.node);
      read_dropped = true;
    }
  // The copies of dropped inputs it had received were dropped with them.
  if (read_dropped) {
    trace_working_on(n.id, true);
    receive_inputs(n);
    recount(n.id);
  }
}

namespace {

// A value as a kernel of the form `Held` reads it: itself, or its elements in host memory.
template <class Held, class T>
const Held& as_held(const Value<T>& v) {
  if constexpr (std::is_same_v<Held, Value<T>>)
    return v;
  else
    return v.host();
}

}  // namespace

template <class T>
template <class Held>
OpCall<T, Held> ShardedExecutor<T>::call_for(const pcg::Node& n, std::int64_t task) const {
  OpCall<T, Held> call{n.op, n.attrs, {}, {}, {}, {}, {}};
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    const pcg::ParallelShape& shape = graph_.shape_of(n.inputs[i]);
    call.inputs.push_back(&as_held<Held>(input_piece(n.id, i, task)));
    call.regions.push_back(graph_.node(n.inputs[i].node).is_graph_input() ? pcg::whole_region(shape.dims) : pcg::piece_region(shape, task));
    call.logical_dims.push_back(shape.dims);
  }
  for (const pcg::ParallelShape& out : n.output_shapes) {
    call.output_regions.push_back(pcg::piece_region(out, task));
    call.output_dims.push_back(call.output_regions.back().extent());
  }
  return call;
}

template <class T>
int ShardedExecutor<T>::rank_of(pcg::NodeId node, std::int64_t task) const {
  if (transport_.size() == 1) return 0;
  return runs_[node.index()].view.devices[static_cast<std::size_t>(task)];
}

template <class T>
bool ShardedExecutor<T>::local(pcg::NodeId node, std::int64_t task) const {
  return graph_.node(node).is_graph_input() || rank_of(node, task) == transport_.rank();
}

template <class T>
const Value<T>& ShardedExecutor<T>::held(pcg::PortRef port, std::int64_t task) const {
  const pcg::Node& n = graph_.node(port.node);
  if (n.is_graph_input()) return fed(n.name);
  const NodeRun& run = runs_[port.node.index()];
  if (run.replicates_input) return fed(graph_.node(run.source.node).name);
  return values_[port.node.index()][static_cast<std::size_t>(port.port)][static_cast<std::size_t>(task)];
}

template <class T>
const Value<T>& ShardedExecutor<T>::input_piece(pcg::NodeId node, std::size_t input, std::int64_t task) const {
  const pcg::PortRef in = graph_.node(node).inputs[input];
  const Value<T>& mine = held(in, task);
  if (graph_.node(in.node).is_graph_input() || runs_[in.node.index()].replicates_input) return mine;
  if (!mine.empty() || local(in.node, task)) return mine;
  return received_[node.index()][input][static_cast<std::size_t>(task)];
}

template <class T>
template <class Work>
void ShardedExecutor<T>::time_layout_change(const pcg::Node& n, bool backward, Work&& work) {
  const auto start = std::chrono::steady_clock::now();
  const double waited_before = transport_.seconds();
  trace_working_on(n.id, backward);
  work();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::int64_t pieces = runs_[n.id.index()].local_pieces;
  if (pieces == 0) return;
  trace_span(backward ? TracedWork::LayoutChangeBackward : TracedWork::LayoutChange, n.id, -1, start);
  OperatorTime& time = times_[n.id.index()];
  (backward ? time.backward_seconds : time.forward_seconds) += elapsed - (transport_.seconds() - waited_before);
  (backward ? time.backward_tasks : time.forward_tasks) += pieces;
}

template <class T>
const Value<T>& ShardedExecutor<T>::fed(const std::string& name) const {
  if (batch_)
    if (auto it = batch_->find(name); it != batch_->end()) return it->second;
  return feeds_->at(name);
}

template <class T>
void ShardedExecutor<T>::forward(const NamedTensors<T>& feeds) {
  copied_feeds_.clear();
  for (const auto& [name, value] : feeds) copied_feeds_.emplace(name, Value<T>(value));
  forward(copied_feeds_);
}

template <class T>
void ShardedExecutor<T>::forward_lap(const NamedValues<T>& feeds, const NamedValues<T>* batch, const std::vector<int>& laps, int lap) {
  if ((!laps.empty() && laps.size() != graph_.size()) || (laps.empty() && lap != 0))
    throw LoomError("forward: lap " + std::to_string(lap) + " of laps for " + std::to_string(laps.size()) + " nodes, the graph has " +
                    std::to_string(graph_.size()));
  transport_.use_channel(channel_);
  if (lap == 0) {
    feeds_ = &feeds;
    batch_ = batch;
    values_.assign(graph_.size(), {});
    received_.assign(graph_.size(), {});
    grads_.clear();
    for (std::size_t bytes : node_bytes_) meter_->live -= bytes;
    node_bytes_.assign(graph_.size(), 0);
  } else if (feeds_ != &feeds || batch_ != batch) {
    throw LoomError("forward: lap " + std::to_string(lap) + " goes on with another pass than lap 0 started");
  }
  for (const pcg::Node& n : graph_.nodes()) {
    if ((laps.empty() ? 0 : laps[n.id.index()]) != lap) continue;
    if (n.is_graph_input()) {
      if (!feeds.count(n.name) && !(batch && batch->count(n.name))) throw LoomError(n.describe() + ": no value given");
      const Value<T>& value = fed(n.name);
      if (value.dims() != n.output_shapes.front().dims)
        throw LoomError(n.describe() + ": the value has shape " + spec::dims_to_string(value.dims()) + ", the graph expects " +
                        spec::dims_to_string(n.output_shapes.front().dims));
      continue;
    }
    values_[n.id.index()].assign(n.output_shapes.size(), Pieces(static_cast<std::size_t>(n.tasks())));
    const NodeRun& run = runs_[n.id.index()];
    if (run.fused_away || run.output_read_at_source) continue;
    // Replicas of a graph input are read from the feed: nothing to move, but their pieces count.
    if (run.parallel)
      time_layout_change(n, false, [&] {
        if (!run.replicates_input) move_pieces(n);
      });
    else
      run_operator(n);
    recount(n.id);
    // Dropped values come back for the backward pass; those no gradient reaches never do.
    const auto freed_after_reading = [this](pcg::NodeId id) { return dropped_[id.index()] || freed_after_forward_[id.index()]; };
    for (pcg::NodeId read : reads_of(n))
      if (freed_after_reading(read) && last_reader_[read.index()] == n.id) release_dropped(read);
    if (freed_after_reading(n.id) && last_reader_[n.id.index()] == n.id) release_dropped(n.id);
  }
}

template <class T>
void ShardedExecutor<T>::receive_inputs(const pcg::Node& n) {
  const auto id = n.id.index();
  const std::int64_t tasks = n.tasks();
  received_[id].assign(n.inputs.size(), Pieces(static_cast<std::size_t>(tasks)));
  Step<T> step;
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    const pcg::PortRef in = n.inputs[i];
    if (graph_.node(in.node).is_graph_input()) continue;
    for (std::int64_t t = 0; t < tasks; ++t) {
      const int src = rank_of(in.node, t), dst = rank_of(n.id, t);
      if (src == dst) continue;
      if (src == transport_.rank()) step.sends.push_back({dst, input_piece(n.id, i, t).host().data});
      if (dst == transport_.rank()) {
        Value<T>& into = received_[id][i][static_cast<std::size_t>(t)];
        std::vector<std::int64_t> dims = piece_dims(graph_.shape_of(in));
        const std::size_t elements = Tensor<T>::element_count(dims);
        step.receive(src, elements, [&into, dims = std::move(dims)](std::vector<T>& data) {
          Tensor<T> piece;
          piece.dims = dims;
          piece.data = std::move(data);
          into = Value<T>(std::move(piece));
        });
      }
    }
  }
  step.run(transport_);
}

template <class T>
void ShardedExecutor<T>::run_operator(const pcg::Node& n) {
  trace_working_on(n.id, recomputing_);
  receive_inputs(n);
  run_tasks(n);
}

template <class T>
void ShardedExecutor<T>::run_tasks(const pcg::Node& n, std::int64_t task) {
  const auto id = n.id.index();
  for (std::int64_t t = 0; t < n.tasks(); ++t) {
    if (!local(n.id, t) || (task >= 0 && t != task)) continue;
    const auto start = std::chrono::steady_clock::now();
    const Kernel<T>& kernel = runs_[id].kernel;
    std::vector<Value<T>> out;
    try {
      if (kernel.forward_values)
        out = kernel.forward_values(call_for<Value<T>>(n, t));
      else
        for (Tensor<T>& made : kernel.forward(call_for<Tensor<T>>(n, t))) out.emplace_back(std::move(made));
    } catch (const LoomError& e) {
      throw LoomError(n.describe() + ": " + e.what());
    }
    for (std::size_t p = 0; p < out.size(); ++p) values_[id][p][static_cast<std::size_t>(t)] = std::move(out[p]);
    times_[id].forward_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++times_[id].forward_tasks;
    trace_span(recomputing_ ? TracedWork::Recompute : TracedWork::Forward, n.id, t, start);
  }
}

template <class T>
Tensor<T> ShardedExecutor<T>::output(std::size_t i) {
  transport_.use_channel(channel_);
  const pcg::PortRef o = graph_.outputs().at(i);
  trace_working_on(o.node, false);
  if (graph_.node(o.node).is_graph_input() || runs_[o.node.index()].replicates_input) return held(o, 0).host();
  const std::vector<std::int64_t>& dims = graph_.shape_of(o).dims;
  const pcg::Region all = pcg::whole_region(dims);
  Tensor<T> whole(dims, T(0));
  for (const OutputPiece& p : output_pieces(i)) add_box(whole, all, p.box, p.value->host().data);
  transport_.sum(whole.data);
  return whole;
}

template <class T>
pcg::PortRef ShardedExecutor<T>::held_output(std::size_t i) const {
  const pcg::PortRef o = graph_.outputs().at(i);
  const NodeRun& run = runs_[o.node.index()];
  return run.output_read_at_source ? run.source : o;
}

template <class T>
std::vector<typename ShardedExecutor<T>::OutputPiece> ShardedExecutor<T>::output_pieces(std::size_t i) const {
  const pcg::PortRef o = held_output(i);
  const pcg::ParallelShape& shape = graph_.shape_of(o);
  std::vector<OutputPiece> pieces;
  if (graph_.node(o.node).is_graph_input()) {
    // Every process holds it whole; the first one counts it.
    if (transport_.rank() == 0) pieces.push_back({pcg::whole_region(shape.dims), &held(o, 0)});
    return pieces;
  }
  for (std::int64_t t = 0; t < shape.tasks(); ++t)
    if (local(o.node, t) && pcg::task_piece(shape, t).replica == 0) pieces.push_back({pcg::piece_region(shape, t), &held(o, t)});
  return pieces;
}

template <class T>
std::vector<int> ShardedExecutor<T>::output_ranks(std::size_t i) const {
  const pcg::PortRef o = held_output(i);
  const pcg::ParallelShape& shape = graph_.shape_of(o);
  std::vector<int> ranks;
  for (std::int64_t t = 0; t < shape.tasks(); ++t) ranks.push_back(graph_.node(o.node).is_graph_input() ? 0 : rank_of(o.node, t));
  return ranks;
}

template <class T>
NamedValues<T> ShardedExecutor<T>::backward_values(const std::vector<Tensor<T>>& output_grads) {
  if (output_grads.size() != graph_.outputs().size())
    throw LoomError("backward: " + std::to_string(output_grads.size()) + " output gradients for " +
                    std::to_string(graph_.outputs().size()) + " graph outputs");
  std::vector<std::vector<Tensor<T>>> piece_grads(output_grads.size());
  for (std::size_t k = 0; k < output_grads.size(); ++k) {
    const pcg::Region all = pcg::whole_region(graph_.shape_of(graph_.outputs()[k]).dims);
    for (const OutputPiece& p : output_pieces(k)) {
      Tensor<T> piece;
      piece.dims = p.value->dims();
      piece.data = read_box(output_grads[k], all, p.box);
      piece_grads[k].push_back(std::move(piece));
    }
  }
  return backward_from_pieces(std::move(piece_grads));
}

template <class T>
NamedValues<T> ShardedExecutor<T>::backward_from_pieces(std::vector<std::vector<Tensor<T>>> piece_grads) {
  if (piece_grads.size() != graph_.outputs().size())
    throw LoomError("backward: gradients of " + std::to_string(piece_grads.size()) + " outputs for " +
                    std::to_string(graph_.outputs().size()) + " graph outputs");
  transport_.use_channel(channel_);
  trace_working_on(pcg::kNoNode, true);
  std::vector<std::vector<Pieces>>& grads = grads_;
  grads.assign(graph_.size(), {});
  restored_.assign(graph_.size(), false);
  for (const pcg::Node& n : graph_.nodes())
    if (!n.is_graph_input()) grads[n.id.index()].assign(n.output_shapes.size(), Pieces(static_cast<std::size_t>(n.tasks())));
  // Filled as contributions arrive: the first one is taken as it is rather than added to zeros.
  NamedValues<T> input_grads;

  for (std::size_t k = 0; k < piece_grads.size(); ++k) {
    const pcg::PortRef o = held_output(k);
    const pcg::ParallelShape& shape = graph_.shape_of(o);
    std::vector<Tensor<T>>& given = piece_grads[k];
    std::size_t next = 0;
    const auto take = [&]() -> Tensor<T>&& {
      if (next == given.size())
        throw LoomError("backward: too few gradient pieces for graph output " + std::to_string(k) + " (" + std::to_string(given.size()) +
                        ")");
      return std::move(given[next++]);
    };
    if (graph_.node(o.node).is_graph_input()) {
      if (transport_.rank() == 0) {
        Tensor<T>&& whole = take();
        if (differentiable_.count(graph_.node(o.node).name)) add_into(input_grads[graph_.node(o.node).name], Value<T>(std::move(whole)));
      }
    } else {
      // The loss reads one copy of a replicated output; every partial sum takes the whole gradient.
      for (std::int64_t t = 0; t < shape.tasks(); ++t)
        if (local(o.node, t) && pcg::task_piece(shape, t).replica == 0)
          add_into(grads[o.node.index()][static_cast<std::size_t>(o.port)][static_cast<std::size_t>(t)], Value<T>(take()));
    }
    if (next != given.size())
      throw LoomError("backward: " + std::to_string(given.size()) + " gradient pieces for graph output " + std::to_string(k) +
                      ", this process holds " + std::to_string(next));
    if (!graph_.node(o.node).is_graph_input()) recount(o.node);
  }
  if (!sum_later_) sync_->start_sums_complete_after(-1, input_grads);
  for (auto it = graph_.nodes().rbegin(); it != graph_.nodes().rend(); ++it) {
    const pcg::Node& n = *it;
    const NodeRun& run = runs_[n.id.index()];
    const int region = region_of_[n.id.index()];
    if (region >= 0) {
      // A co-shard region runs whole at its last member (which members take part is its business).
      if (regions_[static_cast<std::size_t>(region)].back() == n.id)
        region_backward(regions_[static_cast<std::size_t>(region)], grads, input_grads);
    } else if (!n.is_graph_input() && run.differentiated && !run.fused_away && !run.output_read_at_source) {
      if (run.parallel) {
        time_layout_change(n, true, [&] { move_backward(n, grads, input_grads); });
      } else {
        restore_for_backward(n);
        operator_backward(n, grads, input_grads);
        recount(n.id);  // the zero gradients made for outputs nothing read
      }
      for (pcg::NodeId read : reads_of(n)) recount(read);
    }
    trace_working_on(pcg::kNoNode, true);
    if (!sum_later_) sync_->start_sums_complete_after(n.id, input_grads);
    if (sync_->sums_in_flight()) transport_.progress();
    // Nothing later in the backward pass reads this node's values, copies or gradient.
    if (!n.is_graph_input()) {
      values_[n.id.index()].clear();
      received_[n.id.index()].clear();
      grads[n.id.index()].clear();
      recount(n.id);
    }
  }
  // A pipeline's micro-batches add up only the gradients this process computes (sum_gradients
  // makes zeros where it sums one it has none of).
  if (sum_later_) {
    std::erase_if(input_grads, [](const auto& named) { return named.second.empty(); });
    return input_grads;
  }
  for (const std::string& name : differentiable_)
    if (auto id = graph_.find(name); id && input_grads[name].empty())
      input_grads[name] = Value<T>(Tensor<T>(graph_.node(*id).output_shapes[0].dims, T(0)));
  sync_->finish_sums();
  return input_grads;
}

template <class T>
std::vector<Value<T>> ShardedExecutor<T>::task_backward(const pcg::Node& n, std::int64_t t, std::vector<std::vector<Pieces>>& grads) {
  const auto id = n.id.index();
  const auto task = static_cast<std::size_t>(t);
  std::vector<bool> wanted;
  for (std::size_t i = 0; i < n.inputs.size(); ++i) wanted.push_back(takes_gradient_from(n, i));
  for (std::size_t p = 0; p < n.output_shapes.size(); ++p) {
    Value<T>& og = grads[id][p][task];
    if (og.empty()) og = zeros_like(piece_dims(n.output_shapes[p]), &values_[id][p][task]);
  }
  const auto run = [&]<class Held>(const auto& backward) {
    const OpCall<T, Held> call = call_for<Held>(n, t);
    GradCall<T, Held> g{call, {}, {}, wanted};
    for (std::size_t p = 0; p < n.output_shapes.size(); ++p) {
      g.outputs.push_back(&as_held<Held>(values_[id][p][task]));
      g.output_grads.push_back(&as_held<Held>(grads[id][p][task]));
    }
    std::vector<Value<T>> in_grads;
    for (auto& made : backward(g)) in_grads.emplace_back(std::move(made));
    return in_grads;
  };
  const Kernel<T>& kernel = runs_[id].kernel;
  if (kernel.backward_values) return run.template operator()<Value<T>>(kernel.backward_values);
  return run.template operator()<Tensor<T>>(kernel.backward);
}

template <class T>
void ShardedExecutor<T>::operator_backward(const pcg::Node& n, std::vector<std::vector<Pieces>>& grads, NamedValues<T>& input_grads,
                                           std::int64_t only_task) {
  const auto id = n.id.index();
  trace_working_on(n.id, true);
  Step<T> step;
  for (std::int64_t t = 0; t < n.tasks(); ++t) {
    if (only_task >= 0 && t != only_task) continue;
    std::vector<Value<T>> in_grads;
    // A task's time covers its whole work on this process: the call, the kernel and adding up
    // the gradients it gives (as the simulator's compute task stands for all of it).
    const bool runs_here = local(n.id, t);
    const auto start = std::chrono::steady_clock::now();
    if (runs_here) {
      try {
        in_grads = task_backward(n, t, grads);
      } catch (const LoomError& e) {
        throw LoomError(n.describe() + " (backward): " + e.what());
      }
    }
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const pcg::PortRef in = n.inputs[i];
      if (!takes_gradient_from(n, i)) continue;
      const pcg::Node& producer = graph_.node(in.node);
      const int here = rank_of(n.id, t);
      if (producer.is_graph_input()) {
        if (here == transport_.rank() && !in_grads.at(i).empty()) add_into(input_grads[producer.name], std::move(in_grads[i]));
        continue;
      }
      const int there = rank_of(in.node, t);
      Value<T>& target = grads[in.node.index()][static_cast<std::size_t>(in.port)][static_cast<std::size_t>(t)];
      if (here == transport_.rank() && there == transport_.rank()) {
        if (!in_grads.at(i).empty()) add_into(target, std::move(in_grads[i]));
      } else if (here == transport_.rank()) {
        Value<T>& g = in_grads.at(i);
        std::vector<T> sent =
            g.empty() ? std::vector<T>(Tensor<T>::element_count(piece_dims(graph_.shape_of(in))), T(0)) : std::move(g.host_mut().data);
        step.sends.push_back({there, std::move(sent)});
      } else if (there == transport_.rank()) {
        const std::vector<std::int64_t> dims = piece_dims(graph_.shape_of(in));
        step.receive(here, Tensor<T>::element_count(dims), [&target, dims](std::vector<T>& data) {
          Tensor<T> g;
          g.dims = dims;
          g.data = std::move(data);
          add_into(target, Value<T>(std::move(g)));
        });
      }
    }
    if (runs_here) {
      times_[id].backward_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++times_[id].backward_tasks;
      trace_span(TracedWork::Backward, n.id, t, start);
    }
  }
  step.run(transport_);
}

template <class T>
void ShardedExecutor<T>::region_backward(const std::vector<pcg::NodeId>& region, std::vector<std::vector<Pieces>>& grads,
                                         NamedValues<T>& input_grads) {
  // Every member has the same pieces on the same devices, and piece t of a member reads piece t of
  // the members it reads: the region's backward runs whole for one piece before the next.
  const std::int64_t tasks = graph_.node(region.front()).tasks();
  for (std::int64_t t = 0; t < tasks; ++t) {
    recomputing_ = true;
    for (pcg::NodeId m : region)
      if (dropped_[m.index()]) {
        run_tasks(graph_.node(m), t);
        recount(m);
      }
    recomputing_ = false;
    for (auto it = region.rbegin(); it != region.rend(); ++it) {
      const pcg::Node& m = graph_.node(*it);
      if (runs_[it->index()].differentiated) operator_backward(m, grads, input_grads, t);
      for (pcg::NodeId read : reads_of(m)) recount(read);
      // Piece t of m's gradient is spent, and its dropped values are done with.
      for (Pieces& port : grads[it->index()]) port[static_cast<std::size_t>(t)] = Value<T>{};
      if (dropped_[it->index()])
        for (Pieces& port : values_[it->index()]) port[static_cast<std::size_t>(t)] = Value<T>{};
      recount(*it);
    }
  }
}

template <class T>
std::size_t ShardedExecutor<T>::local_operators() const {
  std::size_t count = 0;
  for (const pcg::Node& n : graph_.nodes()) {
    if (n.is_graph_input()) continue;
    for (std::int64_t t = 0; t < n.tasks(); ++t)
      if (local(n.id, t)) {
        ++count;
        break;
      }
  }
  return count;
}

template <class T>
std::optional<pcg::NodeId> ShardedExecutor<T>::first_non_finite() {
  std::vector<T> bad(graph_.size(), T(0));
  for (const pcg::Node& n : graph_.nodes()) {
    if (n.is_graph_input()) continue;
    for (const Pieces& port : values_[n.id.index()])
      for (const Value<T>& piece : port)
        if (!piece.empty() && !all_finite(piece.host())) bad[n.id.index()] = T(1);
  }
  transport_.sum(bad);
  for (std::size_t id = 0; id < bad.size(); ++id)
    if (bad[id] > T(0)) return pcg::NodeId(static_cast<int>(id));
  return std::nullopt;
}

template <class T>
std::vector<pcg::NodeId> ShardedExecutor<T>::collective_nodes(Collective kind) const {
  std::vector<pcg::NodeId> ids;
  for (const pcg::Node& n : graph_.nodes())
    if (const CollectiveGroups* c = runs_[n.id.index()].collective.get(); c && c->kind == kind) ids.push_back(n.id);
  return ids;
}

template <class T>
std::vector<std::string> ShardedExecutor<T>::operators_running(KernelRoute route) const {
  std::vector<std::string> described;
  for (const pcg::Node& n : graph_.nodes())
    if (!n.is_graph_input() && !runs_[n.id.index()].parallel && runs_[n.id.index()].kernel.route == route)
      described.push_back(n.describe());
  return described;
}

int devices_used(const pcg::Graph& graph) {
  int devices = 1;
  for (const pcg::Node& n : graph.nodes())
    if (n.view)
      for (int d : n.view->devices) devices = std::max(devices, d + 1);
  return devices;
}

template class ShardedExecutor<float>;
template class ShardedExecutor<double>;

}  // namespace loom::runtime
