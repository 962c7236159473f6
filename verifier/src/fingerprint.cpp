#include "loom/verifier/fingerprint.hpp"

#include <cstdint>
#include <cstdio>
#include <sstream>

#include "loom/interpreter/int_eval.hpp"
#include "loom/pcg/fnv1a.hpp"
#include "loom/verifier/term_text.hpp"

namespace loom::verifier {
namespace {

void write_expr(std::ostream& os, const spec::ExprPtr& e) { os << (e ? spec::expr_to_string(*e) : "-") << ';'; }

void write_shape(std::ostream& os, const spec::ShapeSpec& shape) {
  os << '[';
  for (const auto& d : shape.dims) {
    if (d.is_pack())
      os << '*' << d.pack_name << ';';
    else
      write_expr(os, d.expr);
  }
  os << ']';
}

void write_attrs(std::ostream& os, const std::vector<spec::AttrParam>& attrs) {
  os << '<';
  for (const auto& a : attrs) {
    os << a.name;
    if (a.domain)
      for (auto v : *a.domain) os << ',' << v;
    for (const auto& [label, v] : a.labels) os << ',' << label << '=' << v;
    os << ';';
  }
  os << '>';
}

void write_inputs(std::ostream& os, const std::vector<spec::InputParam>& inputs) {
  os << '(';
  for (const auto& in : inputs) {
    os << in.name;
    if (in.shape) write_shape(os, *in.shape);
    os << ';';
  }
  os << ')';
}

}  // namespace

std::string fingerprint(std::string_view text) {
  const std::uint64_t h = pcg::fnv1a(text);
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::string form_definition(const spec::Library& library, const std::string& name) {
  std::ostringstream os;
  if (const auto* op = library.find_op(name)) {
    os << "op " << op->name;
    write_attrs(os, op->attrs);
    write_inputs(os, op->inputs);
    for (const auto& out : op->outputs) {
      os << out.name;
      write_shape(os, out.shape);
    }
    for (const auto& s : op->stmts) {
      os << static_cast<int>(s.kind) << s.name;
      for (const auto& ix : s.indices) os << (ix.pack ? "*" : "") << ix.name << ',';
      write_expr(os, s.expr);
    }
  } else if (const auto* p = library.find_parallel(name)) {
    os << "parallel " << p->name;
    write_attrs(os, p->attrs);
    write_inputs(os, p->inputs);
    for (const auto& s : p->stmts) {
      write_expr(os, s.require);
      if (s.update) {
        os << static_cast<int>(s.update->degree) << (s.update->multiply ? '*' : '/');
        write_expr(os, s.update->dim);
        write_expr(os, s.update->amount);
      }
    }
    os << p->values << ';' << (p->backward ? term_to_string(*p->backward) : "-") << ';' << p->lowers_to;
  } else if (const auto* f = library.find_fused(name)) {
    os << "fused " << f->name;
    write_attrs(os, f->attrs);
    write_inputs(os, f->inputs);
    os << term_to_string(*f->body) << ';' << f->lowers_to;
  } else {
    os << "undeclared " << name;
  }
  return os.str();
}

const std::string& FormDefinitions::of(const std::string& name) {
  auto it = known_.find(name);
  if (it == known_.end()) it = known_.emplace(name, form_definition(library_, name)).first;
  return it->second;
}

std::string forms_fingerprint(const spec::Library& library) {
  std::ostringstream os;
  for (const auto* op : library.ops()) os << form_definition(library, op->name) << '\n';
  for (const auto* p : library.parallel_forms()) os << form_definition(library, p->name) << '\n';
  for (const auto* f : library.fused_forms()) os << form_definition(library, f->name) << '\n';
  return fingerprint(os.str());
}

}  // namespace loom::verifier
