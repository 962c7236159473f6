#include "loom/runtime/initializer.hpp"

#include <cmath>
#include <random>

namespace loom::runtime {
namespace {

bool is_lookup(const std::string& op) { return op == "embedding" || op == "embedding_bag" || op == "gather_rows"; }
bool is_conv(const std::string& op) { return op.rfind("conv2d", 0) == 0; }

// The operators that read a port, looking through parallelization operators, which only move it:
// a weight of a plan has the role it has in the model.
std::vector<pcg::Use> compute_readers(const spec::Library& library, const pcg::Graph& graph, pcg::PortRef port) {
  std::vector<pcg::Use> out;
  for (const pcg::Use& use : graph.uses(port)) {
    const std::string& op = graph.node(use.node).op;
    if (!library.find_parallel(op) && !library.find_fused(op)) {
      out.push_back(use);
      continue;
    }
    const std::vector<pcg::Use> further = compute_readers(library, graph, {use.node, 0});
    out.insert(out.end(), further.begin(), further.end());
  }
  return out;
}

}  // namespace

std::uint64_t named_seed(std::uint64_t seed, std::string_view name) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32), static_cast<std::uint32_t>(h),
                    static_cast<std::uint32_t>(h >> 32)};
  std::uint32_t words[2];
  seq.generate(words, words + 2);
  return (static_cast<std::uint64_t>(words[0]) << 32) | words[1];
}

InputRole input_role(const spec::Library& library, const pcg::Graph& graph, int node) {
  const auto uses = compute_readers(library, graph, {node, 0});
  const pcg::Node& self = graph.node(node);
  if (uses.empty()) return self.op == pcg::kWeightOp ? InputRole::Matrix : InputRole::Data;
  const pcg::Node& reader = graph.node(uses.front().node);
  const int slot = uses.front().input;
  if (is_lookup(reader.op) && slot == 0) return InputRole::LookupIds;
  if (self.op == pcg::kInputOp) return InputRole::Data;
  if (reader.op == "batchnorm") {
    static const InputRole roles[] = {InputRole::Data, InputRole::Scale, InputRole::Shift, InputRole::RunningMean,
                                      InputRole::RunningVariance};
    return roles[slot];
  }
  if (reader.op.rfind("layer_norm", 0) == 0 && slot == 1) return InputRole::Scale;
  if (reader.op.rfind("layer_norm", 0) == 0 && slot == 2) return InputRole::Shift;
  if (is_conv(reader.op) && slot == 1) return InputRole::Kernel;
  return InputRole::Matrix;
}

std::int64_t lookup_rows(const spec::Library& library, const pcg::Graph& graph, int node) {
  std::int64_t rows = 0;
  for (const pcg::Use& use : compute_readers(library, graph, {node, 0})) {
    const pcg::Node& reader = graph.node(use.node);
    if (!is_lookup(reader.op) || use.input != 0) continue;
    const std::int64_t r = graph.shape_of(reader.inputs.at(1)).dims.at(0);
    rows = rows == 0 ? r : std::min(rows, r);
  }
  return std::max<std::int64_t>(rows, 1);
}

std::set<std::string> trainable_weights(const spec::Library& library, const pcg::Graph& graph) {
  std::set<std::string> names;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.op != pcg::kWeightOp) continue;
    const InputRole role = input_role(library, graph, n.id);
    if (role != InputRole::RunningMean && role != InputRole::RunningVariance && role != InputRole::LookupIds) names.insert(n.name);
  }
  return names;
}

NamedTensors<double> initial_weights(const spec::Library& library, const pcg::Graph& graph, std::uint64_t seed) {
  NamedTensors<double> weights;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.op != pcg::kWeightOp) continue;
    const auto& dims = n.output_shapes.front().dims;
    Tensor<double> t(dims);
    std::mt19937_64 rng(named_seed(seed, n.name));
    const InputRole role = input_role(library, graph, n.id);
    std::int64_t fan_in = dims.empty() ? 1 : dims.front();
    if (role == InputRole::Kernel) fan_in = static_cast<std::int64_t>(t.size()) / std::max<std::int64_t>(dims.front(), 1);
    else if (dims.size() >= 2) fan_in = dims[dims.size() - 2];
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    const double bound = 1.0 / std::sqrt(static_cast<double>(std::max<std::int64_t>(fan_in, 1)));
    for (double& v : t.data) {
      switch (role) {
        case InputRole::Scale: case InputRole::RunningVariance: v = 1.0; break;
        case InputRole::Shift: case InputRole::RunningMean: v = 0.0; break;
        case InputRole::LookupIds: v = static_cast<double>(rng() % static_cast<std::uint64_t>(lookup_rows(library, graph, n.id))); break;
        default: v = bound * uniform(rng);
      }
    }
    weights.emplace(n.name, std::move(t));
  }
  return weights;
}

}  // namespace loom::runtime
