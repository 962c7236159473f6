#include "loom/interpreter/cost.hpp"

namespace loom::spec {
namespace {

constexpr double kElementBytes = 4;

double node_flops(const CNode& n) {
  double own = 0;
  switch (n.op) {
    case COp::Const:
    case COp::Index:
    case COp::Read: own = 0; break;
    default: own = 1; break;
  }
  double children = 0;
  for (const auto& c : n.children) children += node_flops(c);
  if (n.op == COp::Reduce) {
    double steps = 1;
    for (auto e : n.reduce_extents) steps *= static_cast<double>(e);
    return steps * (children + 1);
  }
  return own + children;
}

double shard_elements(const pcg::ParallelShape& s) {
  double n = 1;
  for (std::size_t i = 0; i < s.dims.size(); ++i) n *= static_cast<double>(s.dims[i]) / static_cast<double>(s.D[i] * s.P[i]);
  return n;
}

}  // namespace

double total_flops(const Program& program) {
  double total = 0;
  for (const auto& st : program.statements) {
    double elements = 1;
    for (auto d : program.buffers[static_cast<std::size_t>(st.target)].dims) elements *= static_cast<double>(d);
    total += elements * node_flops(st.body);
  }
  return total;
}

pcg::TaskCost task_cost(const Program& program, const std::vector<pcg::ParallelShape>& inputs,
                        const std::vector<pcg::ParallelShape>& outputs) {
  pcg::TaskCost cost;
  double pieces = 1;
  if (!outputs.empty()) {
    const auto& o = outputs[0];
    pieces = static_cast<double>(o.V);
    for (std::size_t i = 0; i < o.D.size(); ++i) pieces *= static_cast<double>(o.D[i] * o.P[i]);
  }
  cost.flops = total_flops(program) / pieces;
  for (const auto& in : inputs) cost.bytes_read += shard_elements(in) * kElementBytes;
  for (const auto& out : outputs) cost.bytes_written += shard_elements(out) * kElementBytes;
  return cost;
}

}  // namespace loom::spec
