// Expert strategies as Unity's evaluation describes them: Megatron-LM's tensor parallelism for
// transformers, and model-parallel embedding tables with a data-parallel dense part for
// recommendation models. The structure is read from the operators in the graph.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "loom/interpreter/input_notes.hpp"
#include "loom/interpreter/parallel_rules.hpp"
#include "loom/search/baselines.hpp"

namespace loom::search {
namespace {

// A dense operator reads a weight (a matrix, or a stack of them) with dimensions it sums over and
// one its output keeps, each summed dimension contracted with one its activation reads at a plain
// index (a convolution's window is read at shifted positions, a lookup's rows by id: neither is
// dense). Its multi-head forms: a projection keeps two of the weight's dimensions (heads and
// features), a merge sums over two dimensions of its activation (heads and features).
struct DenseWeight {
  std::size_t input = 0;
  std::vector<std::size_t> kept;    // the weight's dimensions the output keeps, in order
  std::size_t activation_sums = 0;  // dimensions of the other inputs summed over
};

// A lookup: an operator whose spec notes an input as `@index(table)` of a table that is a weight.
// Returns the table's input position.
std::optional<std::size_t> lookup_table(const spec::Library& library, const pcg::Graph& graph, const pcg::Node& n) {
  const spec::OpDecl* op = n.is_graph_input() ? nullptr : library.find_op(n.op);
  if (!op) return std::nullopt;
  for (const spec::InputParam& declared : op->inputs) {
    const std::optional<std::size_t> table = spec::indexed_table(*op, declared);
    if (table && *table < n.inputs.size() && graph.node(n.inputs[*table].node).op == pcg::kWeightOp) return table;
  }
  return std::nullopt;
}

std::optional<DenseWeight> dense_weight(const spec::Library& library, const pcg::Graph& graph, const pcg::Node& n) {
  const spec::OpDecl* op = n.is_graph_input() ? nullptr : library.find_op(n.op);
  if (!op || lookup_table(library, graph, n)) return std::nullopt;
  std::vector<std::vector<std::int64_t>> dims;
  std::optional<std::size_t> weight;
  std::size_t weight_sums = 0, activation_sums = 0;
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    dims.push_back(graph.shape_of(n.inputs[i]).dims);
    const std::vector<bool> summed = spec::summed_dimensions(*op, i, dims[i].size());
    const auto sums = static_cast<std::size_t>(std::count(summed.begin(), summed.end(), true));
    if (graph.node(n.inputs[i].node).op != pcg::kWeightOp) {
      activation_sums += sums;
    } else if (!weight && sums > 0) {
      weight = i;
      weight_sums = sums;
    }
  }
  if (!weight || weight_sums != activation_sums) return std::nullopt;
  const spec::ParallelSummary summary = spec::summarize_parallelism(library.instantiate(n.op, n.attrs, dims));
  DenseWeight w{*weight, {}, activation_sums};
  std::size_t role = 0;
  for (std::size_t i = 0; i < *weight; ++i) role += dims[i].size();
  for (std::size_t d = 0; d < dims[*weight].size(); ++d)
    if (summary.roles.at(role + d).kind == spec::DimensionRole::Free) w.kept.push_back(d);
  if (w.kept.empty()) return std::nullopt;
  return w;
}

// By node id.
std::vector<std::optional<DenseWeight>> dense_weights(const spec::Library& library, const pcg::Graph& graph) {
  std::vector<std::optional<DenseWeight>> out;
  for (const pcg::Node& n : graph.nodes()) out.push_back(dense_weight(library, graph, n));
  return out;
}

bool is_head_projection(const std::optional<DenseWeight>& w) { return w && w->kept.size() >= 2; }
bool is_head_merge(const std::optional<DenseWeight>& w) { return w && w->activation_sums >= 2; }

// The dimension a value is partitioned along and its degree, when that is all its parallelism.
std::optional<std::pair<std::size_t, std::int64_t>> single_split(const pcg::ParallelShape& shape) {
  if (shape.V != 1 || shape.R != 1) return std::nullopt;
  std::optional<std::pair<std::size_t, std::int64_t>> found;
  for (std::size_t d = 0; d < shape.rank(); ++d) {
    if (shape.D[d] == 1) continue;
    if (found) return std::nullopt;
    found = std::make_pair(d, shape.D[d]);
  }
  return found;
}

class Megatron {
 public:
  Megatron(const spec::Library& library, const pcg::Graph& graph, const Machine& machine, std::vector<std::optional<DenseWeight>> dense)
      : library_(library),
        graph_(graph),
        dense_(std::move(dense)),
        degrees_(degrees_from(machine.devices())),
        out_(data_parallel(library, graph, machine)),
        first_(graph.size()),
        second_(graph.size()),
        tensor_parallel_(graph.size()) {
    find_dense_pairs();
  }

  std::vector<Placement> run() {
    for (const pcg::Node& n : graph_.nodes()) {
      if (!is_compute_node(library_, n)) continue;
      const auto id = n.id.index();
      const bool row_op = is_head_merge(dense_[id]) || second_[id];
      if (row_op && row(n)) continue;
      if (is_head_projection(dense_[id]) || first_[id]) {
        column(n);
      } else if (auto c = follow(n); c && !row_op) {
        out_[id] = {std::move(*c), 0};
        tensor_parallel_[id] = true;
      }
    }
    return out_;
  }

 private:
  // Feed-forward pairs: a dense operator whose first input comes from another one through
  // single-input operators only (the activation, dropout).
  void find_dense_pairs() {
    for (const pcg::Node& n : graph_.nodes()) {
      if (!dense_[n.id.index()]) continue;
      int at = n.inputs[0].node;
      while (graph_.node(at).inputs.size() == 1 && !dense_[static_cast<std::size_t>(at)]) at = graph_.node(at).inputs[0].node;
      if (!dense_[static_cast<std::size_t>(at)]) continue;
      first_[static_cast<std::size_t>(at)] = true;
      second_[n.id.index()] = true;
    }
  }

  // Split by output features: the weight's first dimension the output keeps (the heads of a
  // multi-head projection).
  void column(const pcg::Node& n) {
    const DenseWeight& w = *dense_[n.id.index()];
    if (auto c = split_config(library_, graph_, n, w.input, w.kept.front(), degrees_)) {
      out_[n.id.index()] = {std::move(*c), 0};
      tensor_parallel_[n.id.index()] = true;
    }
  }

  // Split along the summed features its first input arrives split by, giving partial sums.
  bool row(const pcg::Node& n) {
    auto c = follow(n);
    if (!c || c->outputs[0].V == 1) return false;
    out_[n.id.index()] = {std::move(*c), 0};
    return true;
  }

  // The node split the way its first input arrives from a tensor-parallel producer.
  std::optional<ParallelConfig> follow(const pcg::Node& n) {
    if (n.inputs.empty()) return std::nullopt;
    const pcg::PortRef in = n.inputs[0];
    if (!tensor_parallel_[in.node.index()]) return std::nullopt;
    const auto split = single_split(out_[in.node.index()].config.outputs[static_cast<std::size_t>(in.port)]);
    if (!split) return std::nullopt;
    return split_config(library_, graph_, n, 0, split->first, {split->second});
  }

  const spec::Library& library_;
  const pcg::Graph& graph_;
  std::vector<std::optional<DenseWeight>> dense_;  // by node id
  std::vector<std::int64_t> degrees_;
  std::vector<Placement> out_;
  std::vector<bool> first_, second_, tensor_parallel_;  // by node id
};

// Each lookup's table whole on its own device, round-robin.
std::vector<Placement> embedding_parallel(const spec::Library& library, const pcg::Graph& graph, const Machine& machine) {
  std::vector<Placement> out = data_parallel(library, graph, machine);
  int table = 0;
  for (const pcg::Node& n : graph.nodes()) {
    if (!lookup_table(library, graph, n)) continue;
    out[n.id.index()] = {unsplit_config(graph, n), table++ % machine.devices()};
  }
  return out;
}

}  // namespace

std::vector<Placement> expert_strategy(const spec::Library& library, const pcg::Graph& graph, const Machine& machine) {
  std::vector<std::optional<DenseWeight>> dense = dense_weights(library, graph);
  if (std::any_of(dense.begin(), dense.end(), [](const auto& w) { return is_head_projection(w) || is_head_merge(w); }))
    return Megatron(library, graph, machine, std::move(dense)).run();
  for (const pcg::Node& n : graph.nodes())
    if (lookup_table(library, graph, n)) return embedding_parallel(library, graph, machine);
  return data_parallel(library, graph, machine);
}

}  // namespace loom::search
