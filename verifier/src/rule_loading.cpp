#include "loom/verifier/rule_loading.hpp"

#include <filesystem>
#include <map>
#include <memory>

#include "concrete_binder.hpp"
#include "loom/interpreter/parser.hpp"
#include "loom/interpreter/rule_graphs.hpp"
#include "loom/verifier/term_text.hpp"

namespace loom::verifier {
namespace {

std::string same_file_key(const std::string& path) {
  std::error_code ec;
  auto canonical = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : canonical.string();
}

std::string goals_text(const std::vector<Goal>& goals, const std::string& arrow) {
  std::string out;
  for (std::size_t i = 0; i < goals.size(); ++i)
    out += (i ? "; " : "") + term_to_string(*goals[i].lhs) + " " + arrow + " " + term_to_string(*goals[i].rhs);
  return out;
}

// Builds the terms of one side of a rule: one term per node output, inputs shared by name.
class GraphTerms {
 public:
  // `literals`: the inputs that stand for numbers (Rule::literals), built as literal terms.
  GraphTerms(const spec::Library& library, std::map<std::string, spec::TermPtr>& variables, const std::map<std::string, double>& literals)
      : library_(library), variables_(variables), literals_(literals) {}

  std::vector<std::vector<spec::TermPtr>> build(const pcg::Graph& graph, const std::string& side) {
    std::vector<std::vector<spec::TermPtr>> terms(graph.size());
    for (const pcg::Node& node : graph.nodes()) {
      std::vector<spec::TermPtr>& out = terms[node.id.index()];
      if (node.is_graph_input()) {
        auto [it, fresh] = variables_.try_emplace(node.name);
        if (fresh) {
          auto var = std::make_shared<spec::Term>();
          var->kind = spec::TermKind::Var;
          var->name = node.name;
          if (auto literal = literals_.find(node.name); literal != literals_.end()) {
            var->kind = spec::TermKind::Literal;
            var->value = literal->second;
          }
          it->second = var;
        }
        out.push_back(it->second);
      } else {
        const auto* params = library_.attr_params(node.op);
        if (!params) throw LoomError(side + ".nodes[" + pcg::to_string(node.id) + "]: unknown form '" + node.op + "'");
        auto apply = std::make_shared<spec::Term>();
        apply->kind = spec::TermKind::Apply;
        apply->name = node.op;
        for (const auto& p : *params) {
          auto value = node.attrs.find(p.name);
          if (value == node.attrs.end())
            throw LoomError(side + ".nodes[" + pcg::to_string(node.id) + "]: " + node.op + " lacks attribute '" + p.name + "'");
          apply->attrs.push_back({"", number_expr(value->second), {}});
        }
        for (const pcg::PortRef& in : node.inputs) apply->args.push_back(terms[in.node.index()][static_cast<std::size_t>(in.port)]);
        const std::size_t outputs = library_.output_count(node.op);
        if (outputs == 1) {
          out.push_back(apply);
        } else {
          for (std::size_t k = 0; k < outputs; ++k) {
            auto project = std::make_shared<spec::Term>();
            project->kind = spec::TermKind::Project;
            project->args.push_back(apply);
            project->position = static_cast<int>(k);
            out.push_back(project);
          }
        }
      }
    }
    return terms;
  }

 private:
  const spec::Library& library_;
  std::map<std::string, spec::TermPtr>& variables_;
  const std::map<std::string, double>& literals_;
};

}  // namespace

Obligation obligation_from_equation(const spec::EquationDecl& rule) {
  Obligation ob;
  ob.name = rule.name;
  ob.loc = rule.loc;
  ob.quantifier = rule.quantifier;
  const bool lhs_tuple = rule.lhs->kind == spec::TermKind::Tuple, rhs_tuple = rule.rhs->kind == spec::TermKind::Tuple;
  if (lhs_tuple || rhs_tuple) {
    if (!lhs_tuple || !rhs_tuple || rule.lhs->args.size() != rule.rhs->args.size())
      throw LoomError({{rule.loc, "rule " + rule.name + ": the sides give different numbers of outputs"}});
    for (std::size_t i = 0; i < rule.lhs->args.size(); ++i) ob.goals.push_back({rule.lhs->args[i], rule.rhs->args[i]});
  } else {
    ob.goals.push_back({rule.lhs, rule.rhs});
  }
  ob.text = "rule " + rule.name + ": " + equation_to_string(rule, "=>");
  ob.key = equation_to_string(rule, "=>");
  return ob;
}

pcg::Rule rule_of_declaration(const spec::Library& library, const spec::EquationDecl& rule) {
  pcg::Rule out = spec::rule_from_declaration(library, rule);
  out.text = obligation_from_equation(rule).text;
  return out;
}

std::vector<Obligation> obligations_from_library(const spec::Library& library, const std::vector<std::string>& files) {
  std::vector<std::string> wanted;
  for (const auto& f : files) wanted.push_back(same_file_key(f));
  std::vector<Obligation> out;
  for (const auto* rule : library.rules()) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), same_file_key(rule->loc.file)) == wanted.end()) continue;
    out.push_back(obligation_from_equation(*rule));
  }
  return out;
}

namespace {

// A rule with open attributes holds beyond the sizes its graphs were typed at, so what is proved is
// its declaration, which must type to exactly the rule.
Obligation obligation_from_declaration_text(const pcg::Rule& rule, const spec::Library& library, const std::string& json_path,
                                            const std::string& file) {
  const std::string where = (file.empty() ? "" : file + ": ") + (json_path.empty() ? "rule " + rule.id : json_path);
  spec::Module module;
  try {
    module = spec::parse_module(rule.text + ";", where);
  } catch (const LoomError& e) {
    throw LoomError(where + ": the rule has open attributes, so its text must be its declaration: " + e.what());
  }
  if (module.rules.size() != 1) throw LoomError(where + ": the rule has open attributes, so its text must be its declaration");
  const spec::EquationDecl& declared = module.rules.front();
  if (auto problems = spec::check_rule_declaration(library, declared); !problems.empty())
    throw LoomError(where + ": the rule's declaration does not check: " + problems.front().message);
  pcg::Rule typed = spec::rule_from_declaration(library, declared);
  if (typed.lhs != rule.lhs || typed.rhs != rule.rhs || typed.symbols != rule.symbols || typed.open_attributes != rule.open_attributes ||
      typed.declared != rule.declared || typed.literals != rule.literals)
    throw LoomError(where +
                    ": the rule is not what its declaration types to (its graphs, open attributes, declared shapes or numbers differ)");
  Obligation ob = obligation_from_equation(declared);
  ob.name = rule.id;
  ob.loc.file = file;
  ob.json_path = json_path;
  return ob;
}

spec::ExprPtr name_expr(const std::string& name) {
  auto e = std::make_shared<spec::Expr>();
  e->kind = spec::ExprKind::Name;
  e->name = name;
  return e;
}

spec::ExprPtr both(spec::ExprPtr a, spec::ExprPtr b, spec::BinaryOp op) {
  if (!a) return b;
  auto e = std::make_shared<spec::Expr>();
  e->kind = spec::ExprKind::Binary;
  e->binary = op;
  e->args = {std::move(a), std::move(b)};
  return e;
}

// The rule's statement over the shapes it declares: each variable's dimensions its symbols and
// numbers (any rank where a rank pack leaves it open, any shape where it declares none), the
// symbols it holds fixed at their values, under the statement's where-condition. So the proof
// covers every shape a match may give the variables (pcg::declared_sizes), not only the sizes the
// graphs were typed at.
spec::Quantifier declared_quantifier(const pcg::Rule& rule, const std::string& where) {
  spec::Quantifier q;
  auto dims_of = [&](const std::vector<pcg::DeclaredDim>& declared, std::vector<spec::DimSpec>& out) {
    for (const pcg::DeclaredDim& d : declared) {
      auto fixed = rule.declared.fixed.find(d.symbol);
      if (d.symbol.empty() || fixed != rule.declared.fixed.end())
        out.push_back({"", number_expr(d.symbol.empty() ? d.size : fixed->second)});
      else
        out.push_back({"", name_expr(d.symbol)});
    }
  };
  for (const pcg::Node& node : rule.lhs.nodes()) {
    if (!node.is_graph_input() || rule.literals.count(node.name)) continue;
    auto declared = rule.declared.variables.find(node.name);
    if (declared == rule.declared.variables.end()) continue;              // implicitly quantified, as a declaration writes it
    spec::Binder b = tensor_binder(node.name, node.output_shapes.at(0));  // its degrees
    b.shape->dims.clear();
    dims_of(declared->second.front, b.shape->dims);
    if (declared->second.rank_pack) b.shape->dims.push_back({node.name + "_dims", nullptr});
    dims_of(declared->second.back, b.shape->dims);
    q.binders.push_back(std::move(b));
  }
  // A fixed symbol stays a name the where-condition may use.
  for (const auto& [symbol, value] : rule.declared.fixed) q.binders.insert(q.binders.begin(), int_binder(symbol, value));
  if (!rule.constraints.empty()) {
    spec::Module module;
    try {
      module = spec::parse_module(rule.text.ends_with(';') ? rule.text : rule.text + ";", where);
    } catch (const LoomError& e) {
      throw LoomError(where + ": the rule has side conditions, so its text must be its declaration: " + e.what());
    }
    if (module.rules.size() != 1 || !module.rules.front().quantifier.where)
      throw LoomError(where + ": the rule has side conditions, so its text must be a declaration that states them");
    q.where = both(q.where, module.rules.front().quantifier.where, spec::BinaryOp::And);
  }
  return q;
}

}  // namespace

Obligation obligation_from_rule(const pcg::Rule& rule, const spec::Library& library, const std::string& json_path,
                                const std::string& file) {
  if (!rule.open_attributes.empty()) return obligation_from_declaration_text(rule, library, json_path, file);
  Obligation ob;
  ob.name = rule.id;
  ob.loc.file = file;
  ob.json_path = json_path;
  std::map<std::string, spec::TermPtr> variables;
  GraphTerms builder(library, variables, rule.literals);
  const std::string prefix = json_path.empty() ? "" : json_path + ".";
  try {
    auto lhs = builder.build(rule.lhs, prefix + "lhs");
    auto rhs = builder.build(rule.rhs, prefix + "rhs");
    for (std::size_t i = 0; i < rule.lhs.outputs().size() && i < rule.rhs.outputs().size(); ++i) {
      const auto l = rule.lhs.outputs()[i], r = rule.rhs.outputs()[i];
      ob.goals.push_back({lhs[l.node.index()][static_cast<std::size_t>(l.port)], rhs[r.node.index()][static_cast<std::size_t>(r.port)]});
    }
  } catch (const LoomError& e) {
    throw LoomError((file.empty() ? "" : file + ": ") + std::string(e.what()));
  }
  ob.quantifier = declared_quantifier(rule, (file.empty() ? "" : file + ": ") + (json_path.empty() ? "rule " + rule.id : json_path));
  ob.key = quantifier_to_string(ob.quantifier) + goals_text(ob.goals, "=>");
  if (rule.text.rfind("rule ", 0) == 0)
    ob.text = rule.text;
  else
    ob.text = "rule " + rule.id + ": " + (rule.text.empty() ? ob.key : rule.text);
  return ob;
}

std::vector<Obligation> obligations_from_rule_library(const pcg::RuleLibrary& rules, const spec::Library& library,
                                                      const std::string& file) {
  std::vector<Obligation> out;
  for (std::size_t i = 0; i < rules.rules.size(); ++i)
    out.push_back(obligation_from_rule(rules.rules[i], library, "rules[" + std::to_string(i) + "]", file));
  return out;
}

}  // namespace loom::verifier
