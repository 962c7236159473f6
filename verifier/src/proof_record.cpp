#include "loom/verifier/proof_record.hpp"

#include <iomanip>
#include <set>
#include <sstream>

#include "loom/verifier/fingerprint.hpp"
#include "loom/verifier/term_text.hpp"

namespace loom::verifier {
namespace {

// Every form `name` stands for, fused forms with the forms of their bodies.
void collect_form(const spec::Library& library, const std::string& name, std::set<std::string>& forms);

void collect_term_forms(const spec::Library& library, const spec::Term& term, std::set<std::string>& forms) {
  if (term.kind == spec::TermKind::Apply) collect_form(library, term.name, forms);
  for (const auto& a : term.args) collect_term_forms(library, *a, forms);
}

void collect_form(const spec::Library& library, const std::string& name, std::set<std::string>& forms) {
  if (!forms.insert(name).second) return;
  if (const auto* fused = library.find_fused(name)) collect_term_forms(library, *fused->body, forms);
}

std::string definitions(FormDefinitions& known, const std::set<std::string>& forms) {
  std::string out;
  for (const auto& f : forms) out += "\n" + known.of(f);
  return out;
}

void write_side(std::ostream& os, const pcg::Graph& graph) {
  for (const pcg::Node& n : graph.nodes()) {
    os << "  %" << n.id << " = ";
    if (n.is_graph_input()) {
      os << n.op << ' ' << n.name << ": " << n.output_shapes.at(0).to_string() << '\n';
      continue;
    }
    os << n.op << '<';
    for (const auto& [name, value] : n.attrs) os << name << '=' << value << ';';
    os << ">(";
    for (const pcg::PortRef& in : n.inputs) os << '%' << in.node << '.' << in.port << ' ';
    os << ")\n";
  }
  os << "  outputs";
  for (const pcg::PortRef& out : graph.outputs()) os << " %" << out.node << '.' << out.port;
  os << '\n';
}

}  // namespace

std::string loom_version() { return LOOM_VERSION; }

std::string rule_content(const pcg::Rule& rule, FormDefinitions& known) {
  const spec::Library& library = known.library();
  std::ostringstream os;
  os << "rule " << rule.id << "\nleft\n";
  write_side(os, rule.lhs);
  os << "right\n";
  write_side(os, rule.rhs);
  os << "where";
  for (const auto& c : rule.constraints) os << ' ' << c << ';';
  // Open attributes widen what the proof is taken to cover, so they are part of the content.
  for (const pcg::RuleSymbol& s : rule.symbols) {
    os << "\nsymbol " << s.name << ' ' << s.variable << ' ' << s.dim << ' ' << s.at_least << ' ' << s.at_most;
    for (const auto& r : s.same_as) os << " =" << r.variable << '.' << r.dim;
    for (auto v : s.values) os << ' ' << v;
  }
  for (const pcg::OpenAttribute& a : rule.open_attributes)
    os << "\nopen " << (a.in_rhs ? "right" : "left") << " %" << a.node << ' ' << a.attribute << '=' << a.symbol;
  // The declared shapes bound what a match may give the variables, as open attributes widen it;
  // the proof is over them (a record made before it was cannot stand for this one).
  os << "\nproved over the declared shapes";
  for (const auto& [variable, shape] : rule.declared.variables) os << "\nshape " << variable << ' ' << pcg::to_string(shape);
  for (const auto& [symbol, value] : rule.declared.fixed) os << "\nfixed " << symbol << '=' << value;
  // Which inputs are numbers, and their values, are what the proof is about.
  for (const auto& [name, value] : rule.literals) os << "\nnumber " << name << ' ' << std::setprecision(17) << value;
  os << "\ntext " << rule.text << "\nforms";
  std::set<std::string> forms;
  for (const pcg::Graph* side : {&rule.lhs, &rule.rhs})
    for (const pcg::Node& n : side->nodes())
      if (!n.is_graph_input()) collect_form(library, n.op, forms);
  os << definitions(known, forms);
  return os.str();
}

std::string rule_content(const pcg::Rule& rule, const spec::Library& library) {
  FormDefinitions known(library);
  return rule_content(rule, known);
}

std::string rule_hash(const pcg::Rule& rule, FormDefinitions& definitions) { return fingerprint(rule_content(rule, definitions)); }

std::string rule_hash(const pcg::Rule& rule, const spec::Library& library) { return fingerprint(rule_content(rule, library)); }

std::string axiom_hash(const spec::EquationDecl& axiom, const spec::Library& library) {
  std::set<std::string> forms;
  collect_term_forms(library, *axiom.lhs, forms);
  collect_term_forms(library, *axiom.rhs, forms);
  FormDefinitions known(library);
  return fingerprint("axiom " + axiom.name + ": " + equation_to_string(axiom, "==") + "\nforms" + definitions(known, forms));
}

void bind_record(pcg::Verification& verification, const pcg::Rule& rule, const spec::Library& library, const AxiomSet& axioms) {
  verification.rule_hash = rule_hash(rule, library);
  verification.loom_version = loom_version();
  verification.axioms.clear();
  for (const auto& name : verification.core) {
    pcg::AxiomUse use;
    use.name = name;
    if (const PreparedAxiom* a = axioms.find(name)) {
      use.hash = a->fingerprint;
      use.checked_instances = a->checked_instances;
    }
    verification.axioms.push_back(std::move(use));
  }
}

std::optional<std::string> stale_axiom(const std::vector<pcg::AxiomUse>& used, const std::map<std::string, std::string>& current) {
  for (const pcg::AxiomUse& a : used) {
    auto it = current.find(a.name);
    if (it == current.end()) return "axiom " + a.name + ", which the proof used, is no longer in the library";
    if (it->second != a.hash)
      return "axiom " + a.name + ", which the proof used, has changed since (hash " + it->second + ", proved with " + a.hash + ")";
  }
  return std::nullopt;
}

ProofChecker::ProofChecker(const spec::Library& library) : definitions_(library) {
  for (const auto* a : library.axioms()) axiom_hashes_[a->name] = axiom_hash(*a, library);
}

std::optional<pcg::Verification> ProofChecker::standing(const pcg::Rule& rule) const {
  if (!rule.verification || rule.verification->status != pcg::VerificationStatus::Proved) return rule.verification;
  return standing(rule, content_hash(rule));
}

std::string ProofChecker::content_hash(const pcg::Rule& rule) const { return rule_hash(rule, definitions_); }

std::optional<pcg::Verification> ProofChecker::standing(const pcg::Rule& rule, const std::string& content_hash) const {
  if (!rule.verification) return std::nullopt;
  pcg::Verification v = *rule.verification;
  if (v.status != pcg::VerificationStatus::Proved) return v;
  auto stale = [&](std::string why) {
    v.status = pcg::VerificationStatus::Stale;
    v.reason = std::move(why);
    return v;
  };
  if (v.rule_hash.empty())
    return stale("the record names no content it was proved for (written before proofs were bound); verify the rules again");
  if (v.loom_version != loom_version())
    return stale("proved by Loom " + (v.loom_version.empty() ? "of unknown version" : v.loom_version) + ", not by this Loom " +
                 loom_version());
  if (content_hash != v.rule_hash)
    return stale("the rule has changed since it was proved (its content hashes to " + content_hash + ", the proof was for " + v.rule_hash +
                 ")");
  std::set<std::string> recorded;
  for (const auto& a : v.axioms) recorded.insert(a.name);
  for (const auto& name : v.core)
    if (!recorded.count(name)) return stale("the record does not bind axiom " + name + ", which the proof used");
  if (auto why = stale_axiom(v.axioms, axiom_hashes_)) return stale(*why);
  return v;
}

std::string standing_name(const std::optional<pcg::Verification>& standing) {
  return standing ? pcg::status_name(standing->status) : "unverified";
}

}  // namespace loom::verifier
