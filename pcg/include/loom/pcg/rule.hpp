#pragma once
// A substitution rule between two PCGs, and a library of them: what `loom generate` writes,
// `loom verify` annotates, the rewrite engine applies and the GUI browses.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/pcg/declared_shape.hpp"
#include "loom/pcg/graph.hpp"

namespace loom::pcg {

enum class RuleCategory { Algebraic, Parallel, Hybrid };

std::string category_name(RuleCategory category);
// Throws LoomError for a name that is not "algebraic", "parallel" or "hybrid".
RuleCategory category_from_name(const std::string& name);

// Stale is never concluded by the verifier: a reader gives it to a record that no longer matches
// the rule or the axioms it was made for (and a plan made with such a rule carries it).
enum class VerificationStatus { Proved, Refuted, Unknown, Stale };

std::string status_name(VerificationStatus status);
VerificationStatus status_from_name(const std::string& name);

// An axiom a proof used, as it was when the proof was made.
struct AxiomUse {
  std::string name;
  std::string hash;           // of its statement and the definitions of the forms it mentions
  int checked_instances = 0;  // random instances on which the interpreter found it sound

  bool operator==(const AxiomUse&) const = default;
};

// What the verifier concluded about one rule, and what it concluded it about.
struct Verification {
  VerificationStatus status = VerificationStatus::Unknown;
  std::vector<std::string> core;  // proved: the axioms the proof used
  std::string counterexample;     // refuted: the instance where the sides differ
  std::string reason;             // unknown: why (timeout, Z3 gave up, ...); stale: what changed
  double seconds = 0;
  // The content the record is bound to: the rule's hash, every core axiom with its hash and
  // numeric check, and the Loom that proved it. Empty in records written before binding existed.
  std::string rule_hash;
  std::vector<AxiomUse> axioms;
  std::string loom_version;

  bool operator==(const Verification&) const = default;
};

// A dimension of a rule's variable.
struct DimRef {
  std::string variable;
  int dim = 0;
  bool operator==(const DimRef&) const = default;
};

// A symbol a rule is written over (a size symbol or an integer binder) that stays open where it is
// an operator's attribute: the rule applies at whatever value the match gives it, not only at the
// one it was typed at.
struct RuleSymbol {
  std::string name;
  // A size symbol: the variable and dimension it names. Empty for an integer binder.
  std::string variable;
  int dim = -1;
  std::vector<DimRef> same_as;  // the other dimensions it names, which a match must give it too
  // An integer binder: the values its proof covers (`in {..}`), or its bounds (`> 0`).
  std::vector<std::int64_t> values;  // empty: any value within the bounds
  std::int64_t at_least = std::numeric_limits<std::int64_t>::min();
  std::int64_t at_most = std::numeric_limits<std::int64_t>::max();

  bool is_size() const { return !variable.empty(); }
  // Whether the binder's proof covers `value`.
  bool covers(std::int64_t value) const;
  bool operator==(const RuleSymbol&) const = default;
};

// An attribute of a node of one side written as a symbol of `Rule::symbols`.
struct OpenAttribute {
  bool in_rhs = false;
  NodeId node;
  std::string attribute;
  std::string symbol;
  bool operator==(const OpenAttribute&) const = default;
};

// `lhs` and `rhs` read the same graph inputs, matched by name (the rule's variables); their
// outputs correspond in order. The graphs hold the concrete example shapes the rule was found
// or written at; `text` is the same rule in spec syntax, shape-generic.
struct Rule {
  std::string id;
  RuleCategory category = RuleCategory::Algebraic;
  Graph lhs, rhs;
  std::vector<std::string> constraints;  // integer side conditions, in spec syntax
  // Attributes that take their value where the rule applies (see RuleSymbol); the graphs hold the
  // values the rule was typed at. Empty for generated rules, whose attributes keep their values.
  std::vector<RuleSymbol> symbols;
  std::vector<OpenAttribute> open_attributes;
  // The variables' shapes as the statement writes them: a match keeps to them (declared_sizes).
  DeclaredShapes declared;
  // Graph inputs that stand for a constant the rule is stated for (a number written in the rule):
  // input name -> value. A match binds such an input only to a rank-0 constant of that value.
  std::map<std::string, double> literals;
  std::string text;
  nlohmann::json provenance = nlohmann::json::object();
  std::optional<Verification> verification;
  // Applied right to left: `lhs` and `rhs` are the library rule's sides swapped (reverse_of). A
  // library never holds such a rule; a search does, since an equality proved holds both ways.
  bool reversed = false;

  // Names of the graph inputs, in the order the LHS declares them.
  std::vector<std::string> variables() const;
};

// The name of the graph input that stands for the number `value` in a rule: the shortest text that
// reads back as the same double, after a '#', so that it never clashes with a variable.
std::string literal_name(double value);

// The rule applied right to left: its sides swapped, its id and proof kept. None when its
// right-hand side cannot serve as a pattern: a bare variable, or one that leaves a variable of the
// left-hand side unbound.
std::optional<Rule> reverse_of(const Rule& rule);

// `rules`, each followed by its reverse where it has one.
std::vector<Rule> both_ways(const std::vector<Rule>& rules);

// Why the two sides of `rule` cannot replace each other: an output whose shape (dims or degrees)
// differs between them. Empty when every output agrees.
std::optional<std::string> sides_differ_in_shape(const Rule& rule);

// The category a rule belongs to from the ops it uses: `is_parallel(op)` says whether an op is a
// parallelization operator (or fused form). Algebraic: none on either side; parallel: only
// parallel ops change (the compute ops of both sides are the same multiset); hybrid: otherwise.
template <class IsParallel>
RuleCategory classify_rule(const Graph& lhs, const Graph& rhs, IsParallel&& is_parallel);

struct RuleLibrary {
  std::vector<std::string> specs;  // the spec files the rules are written against
  std::vector<Rule> rules;
  nlohmann::json summary = nlohmann::json::object();  // what the producer reported
};

// File form: {"format": "loom-rules", "version": 1, "specs": [...], "summary": {...},
//             "rules": [{"id", "category", "variables", "lhs": <loom-pcg>, "rhs": <loom-pcg>,
//                        "constraints", "symbols"?, "open_attributes"?, "declared"?, "literals"?, "text", "provenance",
//                        "verification"?}, ...]}
inline constexpr const char* kRuleFormat = "loom-rules";
inline constexpr int kRuleFormatVersion = 1;

nlohmann::json rule_to_json(const Rule& rule);
nlohmann::json rule_library_to_json(const RuleLibrary& library);
// Rebuilds every graph against `catalog`; throws LoomError naming the JSON path of a problem,
// e.g. `rules[4].rhs.nodes[2]: ...`.
Rule rule_from_json(const nlohmann::json& json, const OpCatalog& catalog);
RuleLibrary rule_library_from_json(const nlohmann::json& json, const OpCatalog& catalog);

// ---- template definition ---------------------------------------------------------------------

template <class IsParallel>
RuleCategory classify_rule(const Graph& lhs, const Graph& rhs, IsParallel&& is_parallel) {
  bool any_parallel = false;
  std::vector<std::string> lhs_compute, rhs_compute;
  auto collect = [&](const Graph& g, std::vector<std::string>& compute) {
    for (const Node& n : g.nodes()) {
      if (n.is_graph_input()) continue;
      if (is_parallel(n.op))
        any_parallel = true;
      else
        compute.push_back(n.op);
    }
    std::sort(compute.begin(), compute.end());
  };
  collect(lhs, lhs_compute);
  collect(rhs, rhs_compute);
  if (!any_parallel) return RuleCategory::Algebraic;
  return lhs_compute == rhs_compute ? RuleCategory::Parallel : RuleCategory::Hybrid;
}

}  // namespace loom::pcg
