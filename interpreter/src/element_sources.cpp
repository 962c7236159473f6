#include "loom/interpreter/element_sources.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "loom/interpreter/body_eval.hpp"
#include "loom/interpreter/compiled_eval.hpp"
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

// The position, among the inputs' elements counted one input after another (`starts`, by buffer),
// of the element a picking body takes at the point `slots`; none where it reads outside its input.
std::optional<std::size_t> picked(const Program& program, const CNode& n, Slots& slots, const BodyEvaluator<RealDomain>& conditions,
                                  const std::vector<std::size_t>& starts) {
  if (n.op == COp::Select)
    return picked(program, RealDomain::truthy(conditions(n.children[0], slots)) ? n.children[1] : n.children[2], slots, conditions, starts);
  const auto buffer = static_cast<std::size_t>(n.buffer);
  const std::optional<std::size_t> offset = read_offset(n, program.buffers[buffer].dims, slots);
  if (!offset) return std::nullopt;
  return starts[buffer] + *offset;
}

// Whether a picking program's output holds every input element exactly once, walking its body at
// each point with no value computed; `sources` (when given) gets, per output element, the source's
// position among the inputs' elements counted one input after another.
bool each_element_once(const Program& program, const std::vector<std::vector<std::int64_t>>& input_dims,
                       std::vector<std::int64_t>* sources) {
  if (!copies_an_input_element(program)) return false;
  std::vector<std::size_t> starts(program.buffers.size(), 0);
  std::size_t total = 0;
  if (input_dims.size() != program.input_buffers.size()) throw LoomError(program.op->name + ": wrong number of inputs");
  for (std::size_t i = 0; i < input_dims.size(); ++i) {
    const Buffer& b = program.buffers[static_cast<std::size_t>(program.input_buffers[i])];
    if (b.dims != input_dims[i])
      throw LoomError(program.op->name + ": input " + std::to_string(i) + " has shape " + dims_to_string(input_dims[i]) +
                      ", the instance expects " + dims_to_string(b.dims));
    starts[static_cast<std::size_t>(program.input_buffers[i])] = total;
    total += static_cast<std::size_t>(Tensor<double>::element_count(b.dims));
  }
  const Statement& st = program.statements.front();
  const std::vector<std::int64_t>& dims = program.buffers[static_cast<std::size_t>(st.target)].dims;
  if (static_cast<std::size_t>(Tensor<double>::element_count(dims)) != total) return false;
  const BodyEvaluator<RealDomain> conditions(program.buffers.size());  // conditions read no buffer
  std::vector<bool> seen(total, false);
  if (sources) sources->assign(total, 0);
  Slots slots(static_cast<std::size_t>(st.slot_count), 0);
  for (std::size_t flat = 0; flat < total; ++flat) {
    std::size_t rest = flat;
    for (std::size_t k = dims.size(); k-- > 0;) {
      slots[static_cast<std::size_t>(st.lhs_slots[k])] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(dims[k]));
      rest /= static_cast<std::size_t>(dims[k]);
    }
    const std::optional<std::size_t> source = picked(program, st.body, slots, conditions, starts);
    if (!source || seen[*source]) return false;
    seen[*source] = true;
    if (sources) (*sources)[flat] = static_cast<std::int64_t>(*source);
  }
  return true;
}

}  // namespace

std::optional<std::vector<std::int64_t>> element_sources(const Program& program, const std::vector<std::vector<std::int64_t>>& input_dims) {
  std::vector<std::int64_t> sources;
  if (!each_element_once(program, input_dims, &sources)) return std::nullopt;
  return sources;
}

bool moves_each_element_once(const Program& program, const std::vector<std::vector<std::int64_t>>& input_dims) {
  return each_element_once(program, input_dims, nullptr);
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
