// The sharded executor's layout changes: a parallel operator (or the chain fused into it) moves
// its source's pieces into its own layout as pcg::piece_moves says, point to point or as one
// collective within groups of processes, and its backward moves the gradients the other way.
#include "collective_groups.hpp"
#include "loom/pcg/task_layout.hpp"
#include "loom/runtime/sharded_executor.hpp"
#include "piece_regions.hpp"
#include "sharded_steps.hpp"

namespace loom::runtime {

template <class T>
std::shared_ptr<const CollectiveGroups> ShardedExecutor<T>::collective_groups_of(const pcg::Node& n, pcg::PortRef in,
                                                                                 const std::vector<pcg::PieceMove>& moves) const {
  if (transport_.size() == 1 || graph_.node(in.node).is_graph_input()) return nullptr;
  std::optional<CollectiveGroups> groups = pcg::collective_groups(
      graph_.shape_of(in), n.output_shapes.at(0), moves, [&](std::int64_t t) { return rank_of(in.node, t); },
      [&](std::int64_t t) { return rank_of(n.id, t); });
  if (!groups) return nullptr;
  return std::make_shared<const CollectiveGroups>(std::move(*groups));
}

template <class T>
void ShardedExecutor<T>::move_pieces(const pcg::Node& n) {
  const auto id = n.id.index();
  const pcg::PortRef in = runs_[id].source;
  const pcg::ParallelShape& from_shape = graph_.shape_of(in);
  const pcg::ParallelShape& to_shape = n.output_shapes.at(0);
  const bool from_input = graph_.node(in.node).is_graph_input();
  Pieces& out = values_[id][0];
  if (const CollectiveGroups* c = runs_[id].collective.get()) {
    if (const CollectiveGroup* g = c->containing(transport_.rank())) {
      const std::size_t k = g->position(transport_.rank());
      run_collective(transport_, c->kind, *g, k, held(in, g->from[k]).host(), pcg::piece_region(from_shape, g->from[k]),
                     out[static_cast<std::size_t>(g->to[k])].host_mut(), pcg::piece_region(to_shape, g->to[k]), piece_dims(to_shape));
    }
    return;
  }
  const std::vector<std::int64_t> dims = piece_dims(to_shape);
  Step<T> step;
  for (const pcg::PieceMove& m : runs_[id].moves) {
    const int dst = rank_of(n.id, m.to);
    const int src = from_input ? dst : rank_of(in.node, m.from);
    const pcg::Region src_region = pcg::piece_region(from_shape, m.from), dst_region = pcg::piece_region(to_shape, m.to);
    const Value<T>& source = held(in, m.from);
    if (src == transport_.rank() && dst == transport_.rank()) {
      add_box_of(source, src_region, out[static_cast<std::size_t>(m.to)], dims, dst_region, m.region);
    } else if (src == transport_.rank()) {
      step.sends.push_back({dst, read_box(source.host(), src_region, m.region)});
    } else if (dst == transport_.rank()) {
      // The piece is taken to the host when the box arrives: local moves may add into it on the
      // device before then.
      Value<T>& into = out[static_cast<std::size_t>(m.to)];
      step.receive(src, static_cast<std::size_t>(m.region.elements()), [&into, &dims, dst_region, box = m.region](std::vector<T>& data) {
        place_box(into.host_mut(), dims, dst_region, box, std::move(data));
      });
    }
  }
  step.run(transport_);
  for (std::int64_t t = 0; t < to_shape.tasks(); ++t)
    if (local(n.id, t) && out[static_cast<std::size_t>(t)].empty()) out[static_cast<std::size_t>(t)] = Value<T>(Tensor<T>(dims, T(0)));
}

template <class T>
void ShardedExecutor<T>::move_backward(const pcg::Node& n, std::vector<std::vector<Pieces>>& grads, NamedValues<T>& input_grads) {
  const auto id = n.id.index();
  const pcg::PortRef in = runs_[id].source;
  const pcg::ParallelShape& from_shape = graph_.shape_of(in);
  const pcg::ParallelShape& to_shape = n.output_shapes.at(0);
  const pcg::Node& producer = graph_.node(in.node);
  const pcg::Region all = pcg::whole_region(from_shape.dims);
  Pieces& out = grads[id][0];
  Pieces* back = producer.is_graph_input() ? nullptr : &grads[in.node.index()][static_cast<std::size_t>(in.port)];
  if (const CollectiveGroups* c = runs_[id].collective.get()) {
    // Each old piece went into the new pieces of its group: its gradient is the transposed
    // collective of theirs (allreduce for allreduce, reduce-scatter for all-gather and back, an
    // all-to-all's blocks back the way they came).
    if (const CollectiveGroup* g = c->containing(transport_.rank())) {
      const std::size_t k = g->position(transport_.rank());
      Value<T>& given = out[static_cast<std::size_t>(g->to[k])];
      if (given.empty()) given = Value<T>(Tensor<T>(piece_dims(to_shape), T(0)));
      run_collective(transport_, pcg::transpose(c->kind), *g, k, given.host(), pcg::piece_region(to_shape, g->to[k]),
                     (*back)[static_cast<std::size_t>(g->from[k])].host_mut(), pcg::piece_region(from_shape, g->from[k]),
                     piece_dims(from_shape), true);
    }
    return;
  }
  Step<T> step;
  for (const pcg::PieceMove& m : runs_[id].moves) {
    // The forward move added a box of piece m.from into piece m.to: its gradient flows back.
    const int holder = rank_of(n.id, m.to);
    const int target = back ? rank_of(in.node, m.from) : holder;
    const pcg::Region dst_region = pcg::piece_region(to_shape, m.to);
    auto add_back = [&, m](std::vector<T>& data) {
      if (!back) {
        if (differentiable_.count(producer.name))
          place_box(input_grads[producer.name].host_mut(), from_shape.dims, all, m.region, std::move(data));
        return;
      }
      place_box((*back)[static_cast<std::size_t>(m.from)].host_mut(), piece_dims(from_shape), pcg::piece_region(from_shape, m.from),
                m.region, std::move(data));
    };
    if (holder == transport_.rank()) {
      Value<T>& g = out[static_cast<std::size_t>(m.to)];
      if (g.empty()) g = zeros_like(piece_dims(to_shape), &values_[id][0][static_cast<std::size_t>(m.to)]);
      if (target != transport_.rank())
        step.sends.push_back({target, read_box(g.host(), dst_region, m.region)});
      else if (back)
        add_box_of(g, dst_region, (*back)[static_cast<std::size_t>(m.from)], piece_dims(from_shape), pcg::piece_region(from_shape, m.from),
                   m.region);
      else if (differentiable_.count(producer.name))
        add_box_of(g, dst_region, input_grads[producer.name], from_shape.dims, all, m.region);
    } else if (target == transport_.rank()) {
      step.receive(holder, static_cast<std::size_t>(m.region.elements()), add_back);
    }
  }
  step.run(transport_);
}

template std::shared_ptr<const CollectiveGroups> ShardedExecutor<float>::collective_groups_of(const pcg::Node&, pcg::PortRef,
                                                                                              const std::vector<pcg::PieceMove>&) const;
template void ShardedExecutor<float>::move_pieces(const pcg::Node&);
template void ShardedExecutor<float>::move_backward(const pcg::Node&, std::vector<std::vector<std::vector<Value<float>>>>&,
                                                    NamedValues<float>&);
template std::shared_ptr<const CollectiveGroups> ShardedExecutor<double>::collective_groups_of(const pcg::Node&, pcg::PortRef,
                                                                                               const std::vector<pcg::PieceMove>&) const;
template void ShardedExecutor<double>::move_pieces(const pcg::Node&);
template void ShardedExecutor<double>::move_backward(const pcg::Node&, std::vector<std::vector<std::vector<Value<double>>>>&,
                                                     NamedValues<double>&);

}  // namespace loom::runtime
