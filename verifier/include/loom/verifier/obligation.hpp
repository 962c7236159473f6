#pragma once
// What the verifier proves: a rule brought to one form whether it was written in spec syntax or
// read from a rule library: its quantifier (binders and side conditions), one equation per output,
// and, for rules read from PCGs, the concrete dimensions of every subterm.
#include <cstdint>
#include <string>
#include <vector>

#include "loom/interpreter/ast.hpp"

namespace loom::verifier {

// lhs == rhs, for one output of the rule.
struct Goal {
  spec::TermPtr lhs, rhs;
};

struct Obligation {
  std::string name;
  SourceLocation loc;           // where the rule is written; for JSON rules the file and no line
  std::string json_path;        // for JSON rules, e.g. `rules[4]`
  spec::Quantifier quantifier;  // no binders: the variables are implicitly quantified
  std::vector<Goal> goals;
  std::string text;  // the rule as the user should see it
  std::string key;   // canonical statement: equal keys mean the same proof obligation

  // Where to point a message about this rule: `file:line:col` or `file: rules[4]`.
  std::string where() const;
};

// Names of the tensor variables the goals read, in order of first appearance.
std::vector<std::string> goal_variables(const Obligation& obligation);

}  // namespace loom::verifier
