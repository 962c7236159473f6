#include "loom/interpreter/element_sources.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "loom/interpreter/evaluate.hpp"
#include "loom/interpreter/graph_eval.hpp"
#include "loom/interpreter/numeric.hpp"

namespace loom::spec {
namespace {

// Tensors of these dims numbered 1, 2, ... one after another.
std::vector<Tensor<double>> numbered(const std::vector<std::vector<std::int64_t>>& dims) {
  std::vector<Tensor<double>> out;
  double next = 1;
  for (const auto& d : dims) {
    Tensor<double> t(d);
    for (double& v : t.data) v = next++;
    out.push_back(std::move(t));
  }
  return out;
}

std::optional<std::vector<std::int64_t>> sources_if_each_once(const std::vector<Tensor<double>>& made, std::size_t total) {
  if (made.size() != 1 || made.front().size() != total) return std::nullopt;
  std::vector<std::int64_t> sources(total);
  std::vector<bool> seen(total, false);
  for (std::size_t i = 0; i < total; ++i) {
    const double v = made.front().data[i];
    if (!(v >= 1 && v <= static_cast<double>(total)) || v != std::floor(v)) return std::nullopt;
    const auto source = static_cast<std::size_t>(v) - 1;
    if (seen[source]) return std::nullopt;
    seen[source] = true;
    sources[i] = static_cast<std::int64_t>(source);
  }
  return sources;
}

std::size_t total_of(const std::vector<Tensor<double>>& inputs) {
  std::size_t total = 0;
  for (const auto& t : inputs) total += t.size();
  return total;
}

// Whether `n` computes from indices alone (a select's condition, a read's index).
bool from_indices_alone(const CNode& n) {
  if (n.op == COp::Read || n.op == COp::Reduce || n.op == COp::Call) return false;
  return std::all_of(n.children.begin(), n.children.end(), from_indices_alone);
}

// Whether `n` is one input element, chosen by conditions on indices alone: reads, and selects
// between them. An element's value is then copied, never computed, whatever it is.
bool picks_an_input_element(const Program& program, const CNode& n) {
  if (n.op == COp::Select)
    return from_indices_alone(n.children[0]) && picks_an_input_element(program, n.children[1]) &&
           picks_an_input_element(program, n.children[2]);
  if (n.op != COp::Read || n.has_fallback) return false;
  const auto& inputs = program.input_buffers;
  if (std::find(inputs.begin(), inputs.end(), n.buffer) == inputs.end()) return false;
  return std::all_of(n.index.begin(), n.index.end(),
                     [](const IndexCalc& calc) { return std::all_of(calc.expr.begin(), calc.expr.end(), from_indices_alone); });
}

bool copies_an_input_element(const Program& program) {
  return program.statements.size() == 1 && program.output_buffers.size() == 1 &&
         picks_an_input_element(program, program.statements.front().body);
}

}  // namespace

std::optional<std::vector<std::int64_t>> element_sources(const Program& program, const std::vector<std::vector<std::int64_t>>& input_dims) {
  // The numbering tells which element each copies; only the form of the body tells that it copies.
  if (!copies_an_input_element(program)) return std::nullopt;
  const std::vector<Tensor<double>> inputs = numbered(input_dims);
  std::vector<const Tensor<double>*> args;
  for (const auto& t : inputs) args.push_back(&t);
  return sources_if_each_once(evaluate<RealDomain>(program, args), total_of(inputs));
}

std::optional<std::vector<std::int64_t>> element_sources(const Library& library, const pcg::Graph& recipe) {
  std::vector<std::vector<std::int64_t>> dims;
  std::vector<std::string> names;
  for (const pcg::Node& n : recipe.nodes()) {
    if (n.is_graph_input()) {
      dims.push_back(n.output_shapes.front().dims);
      names.push_back(n.name);
      continue;
    }
    const OpDecl* op = library.find_op(n.op);
    if (!op) return std::nullopt;
    std::vector<std::vector<std::int64_t>> read;
    for (pcg::PortRef in : n.inputs) read.push_back(recipe.shape_of(in).dims);
    if (!copies_an_input_element(*library.compiled(*op, n.attrs, read))) return std::nullopt;
  }
  std::vector<Tensor<double>> inputs = numbered(dims);
  const std::size_t total = total_of(inputs);
  std::map<std::string, Tensor<double>> by_name;
  for (std::size_t i = 0; i < names.size(); ++i) by_name.emplace(names[i], std::move(inputs[i]));
  return sources_if_each_once(evaluate_graph<RealDomain>(library, recipe, by_name), total);
}

}  // namespace loom::spec
