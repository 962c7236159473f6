#include "loom/verifier/term_text.hpp"

#include <sstream>

#include "loom/interpreter/int_eval.hpp"

namespace loom::verifier {
namespace {

std::string list_text(const std::vector<spec::ExprPtr>& list) {
  std::string out = "[";
  for (std::size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + spec::expr_to_string(*list[i]);
  return out + "]";
}

std::string shape_text(const spec::ShapeSpec& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.dims.size(); ++i) {
    const auto& d = shape.dims[i];
    out += (i ? ", " : "") + (d.is_pack() ? "*" + d.pack_name : spec::expr_to_string(*d.expr));
  }
  return out + "]";
}

std::string degrees_text(const spec::DegreeAnnotation& degrees) {
  std::vector<std::string> parts;
  if (!degrees.D.empty()) parts.push_back("D: " + list_text(degrees.D));
  if (!degrees.P.empty()) parts.push_back("P: " + list_text(degrees.P));
  if (degrees.V) parts.push_back("V: " + spec::expr_to_string(*degrees.V));
  if (degrees.R) parts.push_back("R: " + spec::expr_to_string(*degrees.R));
  if (parts.empty()) return "";
  std::string out = " {";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out + "}";
}

std::string binder_text(const spec::Binder& b) {
  std::ostringstream os;
  os << b.name;
  if (b.is_int) {
    os << ": int";
    if (b.domain) {
      os << " in {";
      for (std::size_t i = 0; i < b.domain->size(); ++i) os << (i ? ", " : "") << (*b.domain)[i];
      os << "}";
    } else if (!b.bound_op.empty()) {
      os << " " << b.bound_op << " " << b.bound;
    }
  } else if (b.shape) {
    os << ": " << shape_text(*b.shape) << degrees_text(b.degrees);
  }
  return os.str();
}

}  // namespace

std::string term_to_string(const spec::Term& term) {
  switch (term.kind) {
    case spec::TermKind::Var: return term.name;
    case spec::TermKind::Literal: return term.name.substr(1);
    case spec::TermKind::Project:
      return term_to_string(*term.args[0]) + "." + (term.position >= 0 ? std::to_string(term.position) : term.field);
    case spec::TermKind::Tuple: {
      std::string out = "(";
      for (std::size_t i = 0; i < term.args.size(); ++i) out += (i ? ", " : "") + term_to_string(*term.args[i]);
      return out + ")";
    }
    case spec::TermKind::Apply: break;
  }
  std::string out = term.name;
  if (!term.attrs.empty()) {
    out += "<";
    for (std::size_t i = 0; i < term.attrs.size(); ++i) {
      const auto& a = term.attrs[i];
      out += (i ? ", " : "") + (a.name.empty() ? "" : a.name + " = ") + spec::expr_to_string(*a.value);
    }
    out += ">";
  }
  out += "(";
  for (std::size_t i = 0; i < term.args.size(); ++i) out += (i ? ", " : "") + term_to_string(*term.args[i]);
  return out + ")";
}

std::string quantifier_to_string(const spec::Quantifier& quantifier) {
  if (quantifier.binders.empty() && !quantifier.where) return "";
  std::string out = "forall ";
  for (std::size_t i = 0; i < quantifier.binders.size(); ++i) out += (i ? ", " : "") + binder_text(quantifier.binders[i]);
  if (quantifier.where) out += " where " + spec::expr_to_string(*quantifier.where);
  return out + ". ";
}

std::string equation_to_string(const spec::EquationDecl& equation, const std::string& arrow) {
  return quantifier_to_string(equation.quantifier) + term_to_string(*equation.lhs) + " " + arrow + " " + term_to_string(*equation.rhs);
}

}  // namespace loom::verifier
