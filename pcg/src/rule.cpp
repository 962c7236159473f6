#include "loom/pcg/rule.hpp"

#include <charconv>
#include <set>
#include <utility>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/graph_json.hpp"
#include "loom/pcg/json_read.hpp"
#include "loom/pcg/rule_symbols.hpp"

namespace loom::pcg {

using nlohmann::json;
using namespace json_read;

std::string category_name(RuleCategory category) {
  switch (category) {
    case RuleCategory::Algebraic: return "algebraic";
    case RuleCategory::Parallel: return "parallel";
    case RuleCategory::Hybrid: return "hybrid";
  }
  return "?";
}

RuleCategory category_from_name(const std::string& name) {
  for (RuleCategory c : {RuleCategory::Algebraic, RuleCategory::Parallel, RuleCategory::Hybrid})
    if (category_name(c) == name) return c;
  throw LoomError("unknown rule category \"" + name + "\" (expected algebraic, parallel or hybrid)");
}

std::string status_name(VerificationStatus status) {
  switch (status) {
    case VerificationStatus::Proved: return "proved";
    case VerificationStatus::Refuted: return "refuted";
    case VerificationStatus::Unknown: return "unknown";
    case VerificationStatus::Stale: return "stale";
  }
  return "?";
}

VerificationStatus status_from_name(const std::string& name) {
  for (VerificationStatus s :
       {VerificationStatus::Proved, VerificationStatus::Refuted, VerificationStatus::Unknown, VerificationStatus::Stale})
    if (status_name(s) == name) return s;
  throw LoomError("unknown verification status \"" + name + "\" (expected proved, refuted, unknown or stale)");
}

std::string literal_name(double value) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, value);
  return "#" + std::string(text, result.ptr);
}

std::vector<std::string> Rule::variables() const {
  std::vector<std::string> names;
  for (const Node& n : lhs.nodes())
    if (n.is_graph_input()) names.push_back(n.name);
  return names;
}

std::optional<Rule> reverse_of(const Rule& rule) {
  for (PortRef o : rule.rhs.outputs())
    if (rule.rhs.node(o.node).is_graph_input()) return std::nullopt;
  std::set<std::string> bound;
  for (const Node& n : rule.rhs.nodes())
    if (n.is_graph_input()) bound.insert(n.name);
  for (const Node& n : rule.lhs.nodes())
    if (n.is_graph_input() && !bound.count(n.name)) return std::nullopt;
  Rule out = rule;
  std::swap(out.lhs, out.rhs);
  out.reversed = !rule.reversed;
  std::set<std::string> fixed_by_lhs;
  for (OpenAttribute& a : out.open_attributes) {
    a.in_rhs = !a.in_rhs;
    if (!a.in_rhs) fixed_by_lhs.insert(a.symbol);
  }
  // An integer binder the new left-hand side does not fix keeps the value the rule was typed at.
  std::erase_if(out.open_attributes, [&](const OpenAttribute& a) {
    if (!a.in_rhs || fixed_by_lhs.count(a.symbol)) return false;
    auto s = std::find_if(out.symbols.begin(), out.symbols.end(), [&](const RuleSymbol& x) { return x.name == a.symbol; });
    return s == out.symbols.end() || !s->is_size();
  });
  return out;
}

std::vector<Rule> both_ways(const std::vector<Rule>& rules) {
  std::vector<Rule> out;
  out.reserve(2 * rules.size());
  for (const Rule& r : rules) {
    out.push_back(r);
    if (auto back = reverse_of(r)) out.push_back(std::move(*back));
  }
  return out;
}

std::optional<std::string> sides_differ_in_shape(const Rule& rule) {
  const auto& left = rule.lhs.outputs();
  const auto& right = rule.rhs.outputs();
  for (std::size_t i = 0; i < left.size() && i < right.size(); ++i) {
    const ParallelShape& l = rule.lhs.node(left[i].node).output_shapes.at(static_cast<std::size_t>(left[i].port));
    const ParallelShape& r = rule.rhs.node(right[i].node).output_shapes.at(static_cast<std::size_t>(right[i].port));
    if (l == r) continue;
    return std::string("the sides differ in shape") + (left.size() > 1 ? " at output " + std::to_string(i) : "") +
           ": the left-hand side gives " + l.to_string() + ", the right-hand side " + r.to_string();
  }
  return std::nullopt;
}

namespace {

json verification_to_json(const Verification& v) {
  json j = {{"status", status_name(v.status)}, {"seconds", v.seconds}};
  if (!v.core.empty() || v.status == VerificationStatus::Proved) j["core"] = v.core;
  if (!v.counterexample.empty()) j["counterexample"] = v.counterexample;
  if (!v.reason.empty()) j["reason"] = v.reason;
  if (!v.rule_hash.empty()) j["rule_hash"] = v.rule_hash;
  if (!v.axioms.empty()) {
    json axioms = json::array();
    for (const AxiomUse& a : v.axioms) axioms.push_back({{"name", a.name}, {"hash", a.hash}, {"checked_instances", a.checked_instances}});
    j["axioms"] = std::move(axioms);
  }
  if (!v.loom_version.empty()) j["loom_version"] = v.loom_version;
  return j;
}

Verification verification_from_json(const json& j, const std::string& path) {
  require_object(j, path);
  reject_unknown_keys(j, path, {"status", "core", "counterexample", "reason", "seconds", "rule_hash", "axioms", "loom_version"});
  Verification v;
  const std::string status = read_string(require(j, "status", path), member(path, "status"));
  at_path(member(path, "status"), [&] { v.status = status_from_name(status); });
  if (j.contains("core")) {
    const json& core = require_array(j.at("core"), member(path, "core"));
    for (std::size_t i = 0; i < core.size(); ++i) v.core.push_back(read_string(core[i], indexed(member(path, "core"), i)));
  }
  if (j.contains("counterexample")) v.counterexample = read_string(j.at("counterexample"), member(path, "counterexample"));
  if (j.contains("reason")) v.reason = read_string(j.at("reason"), member(path, "reason"));
  if (j.contains("seconds")) {
    if (!j.at("seconds").is_number()) fail(member(path, "seconds"), "expected a number, got " + j.at("seconds").dump());
    v.seconds = j.at("seconds").get<double>();
  }
  if (j.contains("rule_hash")) v.rule_hash = read_string(j.at("rule_hash"), member(path, "rule_hash"));
  if (j.contains("axioms")) {
    const std::string at = member(path, "axioms");
    const json& axioms = require_array(j.at("axioms"), at);
    for (std::size_t i = 0; i < axioms.size(); ++i) {
      const std::string item = indexed(at, i);
      require_object(axioms[i], item);
      reject_unknown_keys(axioms[i], item, {"name", "hash", "checked_instances"});
      AxiomUse use;
      use.name = read_string(require(axioms[i], "name", item), member(item, "name"));
      use.hash = read_string(require(axioms[i], "hash", item), member(item, "hash"));
      if (axioms[i].contains("checked_instances"))
        use.checked_instances = read_int(axioms[i].at("checked_instances"), member(item, "checked_instances"));
      v.axioms.push_back(std::move(use));
    }
  }
  if (j.contains("loom_version")) v.loom_version = read_string(j.at("loom_version"), member(path, "loom_version"));
  return v;
}

json symbol_to_json(const RuleSymbol& s) {
  json j = {{"name", s.name}};
  if (s.is_size()) {
    j["variable"] = s.variable;
    j["dim"] = s.dim;
    if (!s.same_as.empty()) {
      json also = json::array();
      for (const DimRef& r : s.same_as) also.push_back({{"variable", r.variable}, {"dim", r.dim}});
      j["same_as"] = std::move(also);
    }
    return j;
  }
  if (!s.values.empty()) j["values"] = s.values;
  if (s.at_least != std::numeric_limits<std::int64_t>::min()) j["at_least"] = s.at_least;
  if (s.at_most != std::numeric_limits<std::int64_t>::max()) j["at_most"] = s.at_most;
  return j;
}

RuleSymbol symbol_from_json(const json& j, const std::string& path) {
  require_object(j, path);
  reject_unknown_keys(j, path, {"name", "variable", "dim", "same_as", "values", "at_least", "at_most"});
  RuleSymbol s;
  s.name = read_string(require(j, "name", path), member(path, "name"));
  if (j.contains("variable")) {
    s.variable = read_string(j.at("variable"), member(path, "variable"));
    s.dim = read_int(require(j, "dim", path), member(path, "dim"));
  }
  if (j.contains("same_as")) {
    const std::string at = member(path, "same_as");
    const json& list = require_array(j.at("same_as"), at);
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string item = indexed(at, i);
      require_object(list[i], item);
      reject_unknown_keys(list[i], item, {"variable", "dim"});
      s.same_as.push_back({read_string(require(list[i], "variable", item), member(item, "variable")),
                           read_int(require(list[i], "dim", item), member(item, "dim"))});
    }
  }
  if (j.contains("values")) {
    const json& values = require_array(j.at("values"), member(path, "values"));
    for (std::size_t i = 0; i < values.size(); ++i) s.values.push_back(read_int(values[i], indexed(member(path, "values"), i)));
  }
  if (j.contains("at_least")) s.at_least = read_int(j.at("at_least"), member(path, "at_least"));
  if (j.contains("at_most")) s.at_most = read_int(j.at("at_most"), member(path, "at_most"));
  return s;
}

OpenAttribute open_attribute_from_json(const json& j, const std::string& path) {
  require_object(j, path);
  reject_unknown_keys(j, path, {"side", "node", "attribute", "symbol"});
  OpenAttribute a;
  const std::string side = read_string(require(j, "side", path), member(path, "side"));
  if (side != "lhs" && side != "rhs") fail(member(path, "side"), "expected \"lhs\" or \"rhs\", got \"" + side + "\"");
  a.in_rhs = side == "rhs";
  a.node = read_int(require(j, "node", path), member(path, "node"));
  a.attribute = read_string(require(j, "attribute", path), member(path, "attribute"));
  a.symbol = read_string(require(j, "symbol", path), member(path, "symbol"));
  return a;
}

Rule read_rule(const json& j, const OpCatalog& catalog, const std::string& path) {
  require_object(j, path);
  reject_unknown_keys(j, path,
                      {"id", "category", "variables", "lhs", "rhs", "constraints", "symbols", "open_attributes", "declared", "literals",
                       "text", "provenance", "verification"});
  Rule rule;
  rule.id = read_string(require(j, "id", path), member(path, "id"));
  const std::string category = read_string(require(j, "category", path), member(path, "category"));
  at_path(member(path, "category"), [&] { rule.category = category_from_name(category); });
  at_path(member(path, "lhs"), [&] { rule.lhs = graph_from_json(require(j, "lhs", path), catalog); });
  at_path(member(path, "rhs"), [&] { rule.rhs = graph_from_json(require(j, "rhs", path), catalog); });
  for (const Node& n : rule.rhs.nodes()) {
    if (!n.is_graph_input()) continue;
    const auto in_lhs = rule.lhs.find(n.name);
    if (!in_lhs || !rule.lhs.node(*in_lhs).is_graph_input())
      fail(member(path, "rhs"), "input \"" + n.name + "\" is not an input of the left-hand side");
  }
  if (rule.lhs.outputs().size() != rule.rhs.outputs().size() || rule.lhs.outputs().empty()) {
    fail(path, "the two sides must have the same, non-zero number of outputs (left " + std::to_string(rule.lhs.outputs().size()) +
                   ", right " + std::to_string(rule.rhs.outputs().size()) + ")");
  }
  if (auto differ = sides_differ_in_shape(rule)) fail(path, "rule " + rule.id + ": " + *differ);
  if (j.contains("constraints")) {
    const json& list = require_array(j.at("constraints"), member(path, "constraints"));
    for (std::size_t i = 0; i < list.size(); ++i) rule.constraints.push_back(read_string(list[i], indexed(member(path, "constraints"), i)));
  }
  if (j.contains("symbols")) {
    const json& list = require_array(j.at("symbols"), member(path, "symbols"));
    for (std::size_t i = 0; i < list.size(); ++i) rule.symbols.push_back(symbol_from_json(list[i], indexed(member(path, "symbols"), i)));
  }
  if (j.contains("open_attributes")) {
    const std::string at = member(path, "open_attributes");
    const json& list = require_array(j.at("open_attributes"), at);
    for (std::size_t i = 0; i < list.size(); ++i) rule.open_attributes.push_back(open_attribute_from_json(list[i], indexed(at, i)));
  }
  at_path(member(path, "open_attributes"), [&] { check_open_attributes(rule); });
  if (j.contains("declared")) {
    rule.declared = declared_shapes_from_json(j.at("declared"), member(path, "declared"));
    at_path(member(path, "declared"), [&] { check_declared_shapes(rule); });
  }
  if (j.contains("literals")) {
    const std::string at = member(path, "literals");
    require_object(j.at("literals"), at);
    for (const auto& [name, value] : j.at("literals").items()) {
      const auto input = rule.lhs.find(name);
      if (!input || !rule.lhs.node(*input).is_graph_input() || !rule.lhs.node(*input).output_shapes.at(0).dims.empty())
        fail(member(at, name), "a literal must name a rank-0 input of the left-hand side");
      const double number = read_number(value, member(at, name));
      if (name != literal_name(number))
        fail(member(at, name), "the input of the number " + std::to_string(number) + " is named " + literal_name(number));
      rule.literals[name] = number;
    }
  }
  if (j.contains("text")) rule.text = read_string(j.at("text"), member(path, "text"));
  if (j.contains("provenance")) {
    require_object(j.at("provenance"), member(path, "provenance"));
    rule.provenance = j.at("provenance");
  }
  if (j.contains("verification")) rule.verification = verification_from_json(j.at("verification"), member(path, "verification"));
  return rule;
}

}  // namespace

json rule_to_json(const Rule& rule) {
  json j = {{"id", rule.id},
            {"category", category_name(rule.category)},
            {"variables", rule.variables()},
            {"lhs", graph_to_json(rule.lhs)},
            {"rhs", graph_to_json(rule.rhs)},
            {"constraints", rule.constraints},
            {"text", rule.text},
            {"provenance", rule.provenance}};
  if (!rule.symbols.empty()) {
    json symbols = json::array();
    for (const RuleSymbol& s : rule.symbols) symbols.push_back(symbol_to_json(s));
    j["symbols"] = std::move(symbols);
  }
  if (!rule.open_attributes.empty()) {
    json open = json::array();
    for (const OpenAttribute& a : rule.open_attributes)
      open.push_back({{"side", a.in_rhs ? "rhs" : "lhs"}, {"node", a.node}, {"attribute", a.attribute}, {"symbol", a.symbol}});
    j["open_attributes"] = std::move(open);
  }
  if (!rule.declared.empty()) j["declared"] = declared_shapes_to_json(rule.declared);
  if (!rule.literals.empty()) j["literals"] = rule.literals;
  if (rule.verification) j["verification"] = verification_to_json(*rule.verification);
  return j;
}

json rule_library_to_json(const RuleLibrary& library) {
  json rules = json::array();
  for (const Rule& r : library.rules) rules.push_back(rule_to_json(r));
  return json{{"format", kRuleFormat},
              {"version", kRuleFormatVersion},
              {"specs", library.specs},
              {"summary", library.summary},
              {"rules", std::move(rules)}};
}

Rule rule_from_json(const json& j, const OpCatalog& catalog) { return read_rule(j, catalog, ""); }

RuleLibrary rule_library_from_json(const json& j, const OpCatalog& catalog) {
  check_format(j, kRuleFormat, kRuleFormatVersion, "Loom rule library");
  reject_unknown_keys(j, "", {"format", "version", "specs", "summary", "rules"});
  RuleLibrary library;
  if (j.contains("specs")) {
    const json& specs = require_array(j.at("specs"), "specs");
    for (std::size_t i = 0; i < specs.size(); ++i) library.specs.push_back(read_string(specs[i], indexed("specs", i)));
  }
  if (j.contains("summary")) {
    require_object(j.at("summary"), "summary");
    library.summary = j.at("summary");
  }
  const json& rules = require_array(require(j, "rules", ""), "rules");
  for (std::size_t i = 0; i < rules.size(); ++i) library.rules.push_back(read_rule(rules[i], catalog, indexed("rules", i)));
  return library;
}

}  // namespace loom::pcg
