#include "loom/runtime/initializer.hpp"

#include <cmath>
#include <random>

#include "loom/interpreter/input_notes.hpp"
#include "loom/interpreter/input_roles.hpp"
#include "loom/pcg/fnv1a.hpp"
#include "loom/pcg/weight_folding.hpp"
#include "loom/runtime/folded_weights.hpp"

namespace loom::runtime {

std::uint64_t named_seed(std::uint64_t seed, std::string_view name) {
  const std::uint64_t h = pcg::fnv1a(name);
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32), static_cast<std::uint32_t>(h),
                    static_cast<std::uint32_t>(h >> 32)};
  std::uint32_t words[2];
  seq.generate(words, words + 2);
  return (static_cast<std::uint64_t>(words[0]) << 32) | words[1];
}

namespace {

// The spec's declaration of the input at which `use` reads, if any.
const spec::InputParam* declared_input(const spec::Library& library, const pcg::Graph& graph, const pcg::Use& use) {
  return use.input < 0 ? nullptr : spec::declared_input(library, graph.node(use.node).op, static_cast<std::size_t>(use.input));
}

}  // namespace

double initial_constant(const spec::Library& library, const pcg::Graph& graph, pcg::NodeId node) {
  const auto uses = spec::compute_readers(library, graph, {node, 0});
  const spec::InputParam* declared = uses.empty() ? nullptr : declared_input(library, graph, uses.front());
  const spec::Note* init = declared ? declared->note("init") : nullptr;
  return init ? std::stod(init->arg) : 0.0;
}

std::int64_t lookup_rows(const spec::Library& library, const pcg::Graph& graph, pcg::NodeId node) {
  std::int64_t rows = 0;
  for (const pcg::Use& use : spec::compute_readers(library, graph, {node, 0})) {
    const spec::InputParam* declared = declared_input(library, graph, use);
    const std::optional<std::size_t> table =
        declared ? spec::indexed_table(*library.find_op(graph.node(use.node).op), *declared) : std::nullopt;
    if (!table) continue;
    const std::int64_t r = graph.shape_of(graph.node(use.node).inputs.at(*table)).dims.at(0);
    rows = rows == 0 ? r : std::min(rows, r);
  }
  return std::max<std::int64_t>(rows, 1);
}

namespace {

// The fan-in of a weight of `own_dims` read where `node` is: the extent of its own dimensions that
// the reader sums over, else its next-to-last dimension. A folded weight's parts are read where it
// is, each dimension in its place (a concatenation's), so a part concatenated along the summed
// dimension counts its own extent, as its own reader in the model did.
std::int64_t fan_in_read_as(const spec::Library& library, const pcg::Graph& graph, pcg::NodeId node,
                            const std::vector<std::int64_t>& own_dims) {
  const auto uses = spec::compute_readers(library, graph, {node, 0});
  if (!uses.empty() && own_dims.size() == graph.node(node).output_shapes.front().dims.size())
    if (const spec::OpDecl* op = library.find_op(graph.node(uses.front().node).op))
      if (const std::int64_t summed = spec::summed_extent(*op, static_cast<std::size_t>(uses.front().input), own_dims); summed > 0)
        return summed;
  if (own_dims.empty()) return 1;
  return own_dims.size() >= 2 ? own_dims[own_dims.size() - 2] : own_dims.front();
}

}  // namespace

std::int64_t fan_in(const spec::Library& library, const pcg::Graph& graph, pcg::NodeId node) {
  return fan_in_read_as(library, graph, node, graph.node(node).output_shapes.front().dims);
}

NamedTensors<double> initial_weights_by_parts(const spec::Library& library, const pcg::Graph& graph, std::uint64_t seed) {
  NamedTensors<double> weights;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.op != pcg::kWeightOp) continue;
    const InputRole role = input_role(library, graph, n.id);
    const double constant = initial_constant(library, graph, n.id);
    const std::int64_t rows = role == InputRole::LookupIds ? lookup_rows(library, graph, n.id) : 1;
    const auto draw = [&](const std::string& name, const std::vector<std::int64_t>& dims) {
      Tensor<double> t(dims);
      std::mt19937_64 rng(named_seed(seed, name));
      std::uniform_real_distribution<double> uniform(-1.0, 1.0);
      const double bound = 1.0 / std::sqrt(static_cast<double>(std::max<std::int64_t>(fan_in_read_as(library, graph, n.id, dims), 1)));
      for (double& v : t.data) {
        switch (role) {
          case InputRole::Constant:
          case InputRole::Statistic: v = constant; break;
          case InputRole::LookupIds: v = static_cast<double>(rng() % static_cast<std::uint64_t>(rows)); break;
          default: v = bound * uniform(rng);
        }
      }
      weights.emplace(name, std::move(t));
    };
    if (!n.folded_from) {
      draw(n.name, n.output_shapes.front().dims);
      continue;
    }
    for (const pcg::Node& part : n.folded_from.parts->nodes())
      if (part.is_graph_input()) draw(part.name, part.output_shapes.front().dims);
  }
  return weights;
}

NamedTensors<double> initial_weights(const spec::Library& library, const pcg::Graph& graph, std::uint64_t seed) {
  NamedTensors<double> by_parts = initial_weights_by_parts(library, graph, seed);
  if (!pcg::has_folded_weights(graph)) return by_parts;
  return FoldedWeights(library, graph).folded(std::move(by_parts));
}

}  // namespace loom::runtime
