#include "loom/superopt/op_set.hpp"

#include <algorithm>

#include "loom/interpreter/input_roles.hpp"

namespace loom::superopt {

std::string OpInstance::describe() const {
  std::string out = name;
  for (std::size_t i = 0; i < attr_order.size(); ++i)
    out += (i ? ", " : "<") + std::to_string(attrs.at(attr_order[i])) + (i + 1 == attr_order.size() ? ">" : "");
  return out;
}

bool is_parallel_form(const spec::Library& library, const std::string& name) {
  return library.find_parallel(name) != nullptr || library.find_fused(name) != nullptr;
}

namespace {

// Every combination of the attributes' values, in declaration order.
void expand(const std::vector<spec::AttrParam>& params, const std::vector<std::vector<std::int64_t>>& domains, std::size_t i,
            pcg::AttrMap& current, std::vector<pcg::AttrMap>& out) {
  if (i == params.size()) {
    out.push_back(current);
    return;
  }
  for (std::int64_t v : domains[i]) {
    current[params[i].name] = v;
    expand(params, domains, i + 1, current, out);
  }
  current.erase(params[i].name);
}

std::vector<std::int64_t> input_dimension_sizes(const std::vector<InputTensor>& inputs) {
  std::vector<std::int64_t> sizes;
  for (const auto& in : inputs) sizes.insert(sizes.end(), in.shape.dims.begin(), in.shape.dims.end());
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

std::string known_names(const spec::Library& library, bool parallel) {
  std::string out;
  auto add = [&](const std::string& n) { out += (out.empty() ? "" : ", ") + n; };
  if (parallel) {
    for (const auto* p : library.parallel_forms()) add(p->name);
    for (const auto* f : library.fused_forms()) add(f->name);
  } else {
    for (const auto* o : library.ops()) add(o->name);
  }
  return out;
}

}  // namespace

OpSet OpSet::build(const spec::Library& library, const GeneratorOptions& options, const std::vector<InputTensor>& inputs) {
  OpSet set;
  const std::vector<std::int64_t> free_values = options.free_attr_values.empty() ? input_dimension_sizes(inputs) : options.free_attr_values;
  std::set<std::string> seen;
  auto add_form = [&](const std::string& name, bool want_parallel, const char* option) {
    if (!seen.insert(name).second) return;
    const bool is_op = library.find_op(name) != nullptr;
    const bool is_form = is_parallel_form(library, name);
    if (!is_op && !is_form)
      throw LoomError(std::string(option) + ": the spec library has no " + (want_parallel ? "parallel form" : "operator") + " '" + name +
                      "' (known: " + known_names(library, want_parallel) + ")");
    if (is_op == want_parallel)
      throw LoomError(std::string(option) + ": '" + name + "' is " + (is_op ? "an operator" : "a parallel or fused form") +
                      "; list it under " + (is_op ? "--ops" : "--parallel"));
    if (const auto* op = library.find_op(name); op && spec::detaches_gradient(*op))
      throw LoomError(std::string(option) + ": '" + name +
                      "' has a @detached input: it is the identity on values but not on gradients, so rules that hold of its "
                      "values would change training");
    const auto& params = *library.attr_params(name);
    std::vector<std::vector<std::int64_t>> domains;
    std::set<std::string> free_attrs;
    for (const auto& p : params) {
      const bool is_degree = p.name == "degree";
      const auto requested = options.attr_domains.find(p.name);
      if (is_degree || requested != options.attr_domains.end()) {
        std::vector<std::int64_t> values;
        for (std::int64_t d : is_degree ? options.degrees : requested->second)
          if (!p.domain || std::find(p.domain->begin(), p.domain->end(), d) != p.domain->end()) values.push_back(d);
        if (values.empty())
          throw LoomError(std::string(is_degree ? "--degree" : "--attr") + ": " + name + " accepts none of the values given for '" +
                          p.name + "' (its domain is declared at " + p.loc.to_string() + ")");
        domains.push_back(values);
        if (!p.domain) free_attrs.insert(p.name);
      } else if (p.domain) {
        domains.push_back(*p.domain);
      } else {
        domains.push_back(free_values);
        free_attrs.insert(p.name);
      }
    }
    std::vector<pcg::AttrMap> combos;
    pcg::AttrMap current;
    expand(params, domains, 0, current, combos);
    OpInstance base;
    base.name = name;
    base.kind = library.find_op(name) ? FormKind::Op : library.find_parallel(name) ? FormKind::Parallel : FormKind::Fused;
    base.free_attrs = free_attrs;
    for (const auto& p : params) base.attr_order.push_back(p.name);
    base.inputs = library.input_count(name);
    base.outputs = library.output_count(name);
    if (base.inputs > kMaxOpInputs)
      throw LoomError(std::string(option) + ": '" + name + "' has " + std::to_string(base.inputs) +
                      " inputs; the generator enumerates ops with at most " + std::to_string(kMaxOpInputs));
    if (const auto* op = library.find_op(name)) {
      for (const auto& in : op->inputs) {
        RankRule rule{0, false};
        for (const auto& d : in.shape->dims) {
          if (d.is_pack())
            rule.at_least = true;
          else
            ++rule.rank;
        }
        base.input_ranks.push_back(rule);
      }
    } else {
      base.input_ranks.assign(base.inputs, RankRule{0, true});
    }
    for (auto& attrs : combos) {
      OpInstance inst = base;
      inst.attrs = std::move(attrs);
      set.instances_.push_back(std::move(inst));
      set.max_inputs_ = std::max(set.max_inputs_, base.inputs);
    }
  };
  for (const auto& name : options.ops) add_form(name, false, "--ops");
  for (const auto& name : options.parallel) add_form(name, true, "--parallel");
  if (set.instances_.size() > 0xFFFF)
    throw LoomError("too many operator instances to enumerate (" + std::to_string(set.instances_.size()) + ")");
  return set;
}

}  // namespace loom::superopt
