#include "loom/superopt/render.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <numeric>
#include <set>
#include <sstream>

namespace loom::superopt {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDimNames[] = {"m", "n", "k", "j", "l", "q", "r", "s", "u", "h", "e", "f", "g", "o"};
constexpr const char* kIntNames[] = {"a", "b", "c", "i", "p", "v2", "v3", "v4", "v5", "v6"};

// `size(k)` writes dimension k.
std::string shape_binder(const std::string& name, const pcg::ParallelShape& shape, const std::function<std::string(std::size_t)>& size) {
  std::string out = name + ": [";
  for (std::size_t i = 0; i < shape.rank(); ++i) out += (i ? ", " : "") + size(i);
  out += "]";
  std::vector<std::string> degrees;
  auto list = [](const std::vector<std::int64_t>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  };
  auto all_one = [](const std::vector<std::int64_t>& v) { return std::all_of(v.begin(), v.end(), [](auto d) { return d == 1; }); };
  if (!all_one(shape.D)) degrees.push_back("D: " + list(shape.D));
  if (!all_one(shape.P)) degrees.push_back("P: " + list(shape.P));
  if (shape.V != 1) degrees.push_back("V: " + std::to_string(shape.V));
  if (shape.R != 1) degrees.push_back("R: " + std::to_string(shape.R));
  if (!degrees.empty()) {
    out += " {";
    for (std::size_t i = 0; i < degrees.size(); ++i) out += (i ? ", " : "") + degrees[i];
    out += "}";
  }
  return out;
}

std::int64_t smallest_prime_factor(std::int64_t g) {
  for (std::int64_t p = 2; p * p <= g; ++p)
    if (g % p == 0) return p;
  return g;
}

}  // namespace

std::string rule_text(const std::string& id, const std::string& body) { return "rule " + id + ": " + body + ";"; }

RuleRenderer::RuleRenderer(const spec::Library& library, const OpSet& ops, const std::vector<InputTensor>& inputs,
                           const GeneratorOptions& options)
    : library_(library), ops_(ops), inputs_(inputs), options_(options) {}

bool RuleRenderer::typed_at(const GraphView& view, const std::map<std::int64_t, std::int64_t>& sizes,
                            const PositionSizes& positions) const {
  auto map = [&](std::int64_t v) {
    auto it = sizes.find(v);
    return it == sizes.end() ? v : it->second;
  };
  auto input_shape = [&](std::size_t i) {
    pcg::ParallelShape s = inputs_[i].shape;
    for (std::size_t k = 0; k < s.dims.size(); ++k) {
      auto at = positions.find({i, k});
      s.dims[k] = at == positions.end() ? map(s.dims[k]) : at->second;
    }
    return s;
  };
  std::vector<std::vector<pcg::ParallelShape>> ports;
  try {
    for (const Step& step : view.steps) {
      const OpInstance& op = ops_.at(step.inst);
      pcg::AttrMap attrs = op.attrs;
      for (const auto& name : op.free_attrs) attrs[name] = map(attrs[name]);
      std::vector<pcg::ParallelShape> args;
      for (std::size_t i = 0; i < step.argc; ++i) {
        const TensorRef r = step.args[i];
        args.push_back(is_input_ref(r) ? input_shape(input_of(r)) : ports[node_of(r)][port_of(r)]);
      }
      ports.push_back(library_.infer(op.name, attrs, args));
    }
    for (TensorRef r : view.outputs())
      if (is_input_ref(r)) input_shape(input_of(r)).validate();
  } catch (const LoomError&) {
    return false;
  }
  return true;
}

std::string RuleRenderer::term(const GraphView& view, TensorRef ref, const std::map<std::int64_t, std::string>& names) const {
  if (is_input_ref(ref)) return inputs_[input_of(ref)].name;
  const Step& step = view.steps[node_of(ref)];
  const OpInstance& op = ops_.at(step.inst);
  std::string out = op.name;
  if (!op.attr_order.empty()) {
    out += "<";
    for (std::size_t i = 0; i < op.attr_order.size(); ++i) {
      const std::int64_t v = op.attrs.at(op.attr_order[i]);
      auto it = names.find(v);
      const bool symbolic = op.free_attrs.count(op.attr_order[i]) && it != names.end();
      out += (i ? ", " : "") + (symbolic ? it->second : std::to_string(v));
    }
    out += ">";
  }
  out += "(";
  for (std::size_t i = 0; i < step.argc; ++i) out += (i ? ", " : "") + term(view, step.args[i], names);
  out += ")";
  if (op.outputs > 1) out += "." + std::to_string(port_of(ref));
  return out;
}

pcg::Graph RuleRenderer::graph(const GraphView& view, const std::vector<std::size_t>& variables) const {
  pcg::Graph g;
  std::map<std::size_t, int> input_nodes;
  for (std::size_t v : variables) input_nodes[v] = g.add_input(inputs_[v].name, inputs_[v].shape);
  std::vector<int> nodes;
  for (const Step& step : view.steps) {
    const OpInstance& op = ops_.at(step.inst);
    std::vector<pcg::PortRef> args;
    for (std::size_t i = 0; i < step.argc; ++i) {
      const TensorRef r = step.args[i];
      args.push_back(is_input_ref(r) ? pcg::PortRef{input_nodes.at(input_of(r)), 0}
                                     : pcg::PortRef{nodes[node_of(r)], static_cast<int>(port_of(r))});
    }
    nodes.push_back(g.add_node(library_, op.name, op.attrs, args));
  }
  for (TensorRef r : view.outputs())
    g.mark_output(is_input_ref(r) ? pcg::PortRef{input_nodes.at(input_of(r)), 0}
                                  : pcg::PortRef{nodes[node_of(r)], static_cast<int>(port_of(r))});
  return g;
}

RenderedRule RuleRenderer::render(const GraphView& lhs, const GraphView& rhs, const std::string& id, bool widen) const {
  // Variables in the order they first appear in the text, left side first.
  std::vector<std::size_t> variables;
  std::function<void(const GraphView&, TensorRef)> collect = [&](const GraphView& view, TensorRef r) {
    if (is_input_ref(r)) {
      if (std::find(variables.begin(), variables.end(), input_of(r)) == variables.end()) variables.push_back(input_of(r));
      return;
    }
    const Step& step = view.steps[node_of(r)];
    for (std::size_t i = 0; i < step.argc; ++i) collect(view, step.args[i]);
  };
  for (TensorRef r : lhs.outputs()) collect(lhs, r);
  for (TensorRef r : rhs.outputs()) collect(rhs, r);

  // Symbols: one per distinct size of the variables, then one integer variable per value of an
  // attribute without a domain that is not already a size.
  std::set<std::string> taken;
  for (std::size_t v : variables) taken.insert(inputs_[v].name);
  auto next_name = [&](const auto& pool, std::size_t& cursor) {
    for (;; ++cursor) {
      std::string name = cursor < std::size(pool) ? pool[cursor] : "d" + std::to_string(cursor);
      if (taken.insert(name).second) return name;
    }
  };
  std::map<std::int64_t, std::string> names;
  std::map<std::int64_t, std::string> attr_names;  // how the attributes of each value are written
  std::vector<std::int64_t> dim_values, attr_values;
  std::vector<std::pair<std::string, std::int64_t>> int_binders;
  std::size_t dim_cursor = 0, int_cursor = 0;
  for (std::size_t v : variables)
    for (std::int64_t d : inputs_[v].shape.dims)
      if (!names.count(d)) {
        names[d] = next_name(kDimNames, dim_cursor);
        dim_values.push_back(d);
      }
  for (const GraphView* side : {&lhs, &rhs})
    for (const Step& step : side->steps)
      for (const auto& attr : ops_.at(step.inst).attr_order) {
        if (!ops_.at(step.inst).free_attrs.count(attr)) continue;
        const std::int64_t value = ops_.at(step.inst).attrs.at(attr);
        if (std::find(attr_values.begin(), attr_values.end(), value) == attr_values.end()) attr_values.push_back(value);
        if (!names.count(value)) {
          names[value] = next_name(kIntNames, int_cursor);
          int_binders.emplace_back(names[value], value);
          attr_names[value] = names[value];
        } else if (!attr_names.count(value)) {
          // An attribute equal to a size by the example's choice: widened, it is a symbol of its own.
          attr_names[value] = widen ? next_name(kIntNames, int_cursor) : names[value];
          if (widen) int_binders.emplace_back(attr_names[value], value);
        }
      }

  // Side conditions: divisibility of each size by the degrees, and order between attribute
  // symbols and sizes; each is kept only if a size that breaks it makes a side ill-typed.
  std::vector<std::string> constraints;
  std::int64_t degree_lcm = 1;
  for (std::int64_t d : options_.degrees) degree_lcm = std::lcm(degree_lcm, d);
  std::int64_t cap = 1;
  for (int i = 0; i < options_.max_ops && cap < (std::int64_t{1} << 40); ++i) cap *= degree_lcm;
  std::int64_t scale = 3;
  while (std::gcd(scale, degree_lcm) != 1) ++scale;
  std::map<std::int64_t, std::int64_t> scaled;
  for (const auto& [value, name] : names) scaled[value] = scale * value;
  PositionSizes apart;                             // dimensions given a symbol of their own, at their size
  std::map<Position, std::string> position_names;  // and that symbol
  auto both_typed = [&](const std::map<std::int64_t, std::int64_t>& sizes, const PositionSizes& positions) {
    return typed_at(lhs, sizes, positions) && typed_at(rhs, sizes, positions);
  };
  const bool typed_scaled = both_typed(scaled, apart);

  // A dimension that has the size of an earlier one only by the example's choice gets its own
  // symbol, where both sides stay well-typed with it at another size: the rule then states (and
  // its proof covers) every such pair of sizes, not only equal ones.
  if (widen && typed_scaled) {
    std::set<std::int64_t> seen;
    std::int64_t multiplier = 97;  // coprime with the degrees: keeps each size's divisibility by them
    auto next_multiplier = [&] {
      do multiplier += 2;
      while (std::gcd(multiplier, degree_lcm) != 1);
    };
    auto taken_size = [&](std::int64_t size) {
      for (const auto& [value, s] : scaled)
        if (s == size) return true;
      for (const auto& [at, s] : apart)
        if (s == size) return true;
      return false;
    };
    for (std::size_t v : variables)
      for (std::size_t k = 0; k < inputs_[v].shape.dims.size(); ++k) {
        const std::int64_t d = inputs_[v].shape.dims[k];
        if (seen.insert(d).second) continue;
        std::int64_t size = multiplier * d;
        while (taken_size(size)) {
          next_multiplier();
          size = multiplier * d;
        }
        PositionSizes trial = apart;
        trial[{v, k}] = size;
        if (!both_typed(scaled, trial)) continue;
        apart = std::move(trial);
        position_names[{v, k}] = next_name(kDimNames, dim_cursor);
        next_multiplier();
      }
  }

  if (typed_scaled) {
    // The dimensions of one symbol at `size`: an example size's symbol (`own` null) takes the
    // attributes of that value with it; a dimension with a symbol of its own moves alone.
    auto with = [&](std::int64_t value, const Position* own, std::int64_t size) {
      auto sizes = scaled;
      auto positions = apart;
      if (own)
        positions[*own] = size;
      else
        sizes[value] = size;
      return both_typed(sizes, positions);
    };
    auto divisibility = [&](std::int64_t v, std::int64_t base, const Position* own, const std::string& name) {
      std::int64_t g = std::gcd(v, cap);
      while (g > 1) {
        const std::int64_t weaker = g / smallest_prime_factor(g);
        if (!with(v, own, base + weaker)) break;
        g = weaker;
      }
      if (g > 1) constraints.push_back(name + " % " + std::to_string(g) + " == 0");
    };
    for (std::int64_t v : dim_values) divisibility(v, scale * v, nullptr, names[v]);
    for (const auto& [at, name] : position_names) divisibility(inputs_[at.first].shape.dims[at.second], apart.at(at), &at, name);
    for (std::int64_t a : attr_values) {
      for (std::int64_t v : dim_values)
        if (v > a && !with(v, nullptr, scale * a)) constraints.push_back(attr_names[a] + " < " + names[v]);
      for (const auto& [at, name] : position_names)
        if (inputs_[at.first].shape.dims[at.second] > a && !with(0, &at, scale * a)) constraints.push_back(attr_names[a] + " < " + name);
    }
  }

  auto dim_name = [&](std::size_t v, std::size_t k) {
    auto own = position_names.find({v, k});
    return own != position_names.end() ? own->second : names.at(inputs_[v].shape.dims[k]);
  };
  std::vector<std::string> binders, concrete_binders;
  for (const auto& [name, value] : int_binders) binders.push_back(name + ": int > 0");
  for (std::size_t v : variables) {
    const pcg::ParallelShape& shape = inputs_[v].shape;
    binders.push_back(shape_binder(inputs_[v].name, shape, [&](std::size_t k) { return dim_name(v, k); }));
    concrete_binders.push_back(shape_binder(inputs_[v].name, shape, [&](std::size_t k) { return std::to_string(shape.dims[k]); }));
  }
  auto quantifier = [](const std::vector<std::string>& list, const std::vector<std::string>& where) {
    if (list.empty()) return std::string();
    std::string out = "forall ";
    for (std::size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + list[i];
    for (std::size_t i = 0; i < where.size(); ++i) out += (i ? " && " : " where ") + where[i];
    return out + ". ";
  };

  RenderedRule out;
  auto side = [&](const GraphView& view, const std::map<std::int64_t, std::string>& symbols) {
    if (!view.has_two_outputs()) return term(view, view.output, symbols);
    return "(" + term(view, view.output, symbols) + ", " + term(view, view.second, symbols) + ")";
  };
  out.body = quantifier(binders, constraints) + side(lhs, attr_names) + " => " + side(rhs, attr_names);
  out.concrete_body = quantifier(concrete_binders, {}) + side(lhs, {}) + " => " + side(rhs, {});
  out.rule.id = id;
  out.rule.lhs = graph(lhs, variables);
  out.rule.rhs = graph(rhs, variables);
  out.rule.constraints = constraints;
  for (std::size_t v : variables) {
    pcg::DeclaredShape& shape = out.rule.declared.variables[inputs_[v].name];
    for (std::size_t k = 0; k < inputs_[v].shape.dims.size(); ++k) shape.front.push_back(pcg::DeclaredDim::named(dim_name(v, k)));
  }
  for (std::int64_t a : attr_values) out.rule.declared.fixed[attr_names.at(a)] = a;  // attributes keep their values
  out.rule.text = rule_text(id, out.body);
  out.rule.category = pcg::classify_rule(out.rule.lhs, out.rule.rhs, [&](const std::string& op) { return is_parallel_form(library_, op); });
  return out;
}

std::vector<std::string> spec_files_used(const spec::Library& library, const std::vector<pcg::Rule>& rules) {
  std::set<std::string> files;
  auto declared_in = [&](const std::string& op) -> std::string {
    if (const auto* d = library.find_op(op)) return d->loc.file;
    if (const auto* d = library.find_parallel(op)) return d->loc.file;
    if (const auto* d = library.find_fused(op)) return d->loc.file;
    return "";
  };
  for (const auto& rule : rules)
    for (const pcg::Graph* g : {&rule.lhs, &rule.rhs})
      for (const auto& n : g->nodes()) {
        if (n.is_graph_input()) continue;
        const std::string file = declared_in(n.op);
        if (!file.empty()) files.insert(fs::absolute(file).lexically_normal().string());
      }
  return {files.begin(), files.end()};
}

std::string spec_file(const spec::Library& library, const std::vector<pcg::Rule>& rules, const std::string& directory,
                      const std::string& header) {
  std::ostringstream os;
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);) os << "// " << line << "\n";
  for (const auto& file : spec_files_used(library, rules)) {
    std::string path = file;
    if (!directory.empty()) {
      std::error_code ec;
      fs::path rel = fs::relative(file, fs::absolute(directory), ec);
      if (!ec && !rel.empty()) path = rel.generic_string();
    }
    os << "import \"" << path << "\";\n";
  }
  os << "\n";
  for (const auto& rule : rules) os << rule.text << "\n";
  return os.str();
}

}  // namespace loom::superopt
