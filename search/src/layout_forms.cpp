#include "loom/search/layout_forms.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace loom::search {
namespace {

bool is_attr(const spec::ExprPtr& e, const std::vector<spec::AttrParam>& attrs) {
  return e && e->kind == spec::ExprKind::Name &&
         std::any_of(attrs.begin(), attrs.end(), [&](const spec::AttrParam& a) { return a.name == e->name; });
}

bool has_dim(spec::DegreeKind kind) { return kind == spec::DegreeKind::D || kind == spec::DegreeKind::P; }

std::optional<std::vector<DegreeChange>> parallel_changes(const spec::ParallelDecl& form) {
  std::vector<DegreeChange> out;
  for (const spec::ParallelStmt& s : form.stmts) {
    if (!s.update) continue;
    const spec::DegreeUpdate& u = *s.update;
    if (!is_attr(u.amount, form.attrs) || (has_dim(u.degree) && !is_attr(u.dim, form.attrs))) return std::nullopt;
    out.push_back({u.degree, has_dim(u.degree) ? u.dim->name : "", u.amount->name, u.multiply});
  }
  if (out.empty()) return std::nullopt;
  return out;
}

// The callee's attribute each argument of an application binds, mapped to the caller's attribute
// passed there; nullopt when an argument is anything but a caller's attribute.
std::optional<std::map<std::string, std::string>> bound_attrs(const spec::Term& apply, const std::vector<spec::AttrParam>& callee,
                                                              const std::vector<spec::AttrParam>& caller) {
  std::map<std::string, std::string> out;
  bool named = false;
  for (std::size_t i = 0; i < apply.attrs.size(); ++i) {
    const spec::AttrArg& arg = apply.attrs[i];
    if (!is_attr(arg.value, caller)) return std::nullopt;
    named = named || !arg.name.empty();
    if (!arg.name.empty())
      out[arg.name] = arg.value->name;
    else if (!named && i < callee.size())
      out[callee[i].name] = arg.value->name;
    else
      return std::nullopt;
  }
  return out;
}

// The updates of a fused form's body, innermost application first, in the caller's attributes.
std::optional<std::vector<DegreeChange>> body_changes(const spec::Library& library, const spec::Term& term, const std::string& input,
                                                      const std::vector<spec::AttrParam>& caller) {
  if (term.kind == spec::TermKind::Var)
    return term.name == input ? std::optional<std::vector<DegreeChange>>(std::vector<DegreeChange>{}) : std::nullopt;
  if (term.kind != spec::TermKind::Apply || term.args.size() != 1) return std::nullopt;
  const spec::ParallelDecl* callee = library.find_parallel(term.name);
  if (!callee) return std::nullopt;
  auto inner = body_changes(library, *term.args[0], input, caller);
  const auto own = parallel_changes(*callee);
  const auto bound = bound_attrs(term, callee->attrs, caller);
  if (!inner || !own || !bound) return std::nullopt;
  for (DegreeChange c : *own) {
    const auto amount = bound->find(c.amount_attr);
    const auto dim = bound->find(c.dim_attr);
    if (amount == bound->end() || (has_dim(c.degree) && dim == bound->end())) return std::nullopt;
    c.amount_attr = amount->second;
    if (has_dim(c.degree)) c.dim_attr = dim->second;
    inner->push_back(c);
  }
  return inner;
}

std::vector<std::string> attrs_of(const std::vector<DegreeChange>& changes, bool dims) {
  std::vector<std::string> out;
  for (const DegreeChange& c : changes) {
    const std::string& name = dims ? c.dim_attr : c.amount_attr;
    if (!name.empty() && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

}  // namespace

std::optional<pcg::ParallelShape> LayoutForm::apply(const pcg::AttrMap& attrs, const pcg::ParallelShape& shape) const {
  pcg::ParallelShape out = shape;
  for (const DegreeChange& c : changes) {
    const std::int64_t amount = attrs.at(c.amount_attr);
    if (amount < 1) return std::nullopt;
    std::int64_t* degree = c.degree == spec::DegreeKind::V ? &out.V : &out.R;
    if (has_dim(c.degree)) {
      const std::int64_t dim = attrs.at(c.dim_attr);
      if (dim < 0 || static_cast<std::size_t>(dim) >= out.rank()) return std::nullopt;
      degree = &(c.degree == spec::DegreeKind::D ? out.D : out.P)[static_cast<std::size_t>(dim)];
    }
    if (c.multiply)
      *degree *= amount;
    else if (*degree % amount != 0)
      return std::nullopt;
    else
      *degree /= amount;
  }
  for (std::size_t d = 0; d < out.rank(); ++d)
    if (out.dims[d] % (out.D[d] * out.P[d]) != 0) return std::nullopt;
  return out;
}

std::vector<std::string> LayoutForm::dim_attrs() const { return attrs_of(changes, true); }
std::vector<std::string> LayoutForm::amount_attrs() const { return attrs_of(changes, false); }

std::vector<LayoutForm> layout_forms(const spec::Library& library) {
  std::vector<LayoutForm> out;
  for (const spec::ParallelDecl* form : library.parallel_forms())
    if (auto changes = parallel_changes(*form)) out.push_back({form->name, std::move(*changes)});
  for (const spec::FusedDecl* fused : library.fused_forms()) {
    if (fused->inputs.size() != 1 || !fused->body) continue;
    if (auto changes = body_changes(library, *fused->body, fused->inputs[0].name, fused->attrs); changes && !changes->empty())
      out.push_back({fused->name, std::move(*changes)});
  }
  return out;
}

void each_assignment(const LayoutForm& form, std::size_t rank, const std::vector<std::int64_t>& amounts,
                     const std::function<void(const pcg::AttrMap&)>& visit) {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> choices;
  for (const std::string& a : form.dim_attrs()) {
    std::vector<std::int64_t> dims(rank);
    std::iota(dims.begin(), dims.end(), 0);
    choices.emplace_back(a, dims);
  }
  for (const std::string& a : form.amount_attrs())
    if (std::none_of(choices.begin(), choices.end(), [&](const auto& c) { return c.first == a; })) choices.emplace_back(a, amounts);
  pcg::AttrMap attrs;
  std::function<void(std::size_t)> go = [&](std::size_t i) {
    if (i == choices.size()) return visit(attrs);
    for (std::int64_t v : choices[i].second) {
      attrs[choices[i].first] = v;
      go(i + 1);
    }
  };
  go(0);
}

}  // namespace loom::search
