#include "loom/search/reshard_forms.hpp"

#include <map>

#include "loom/pcg/diagnostic.hpp"

namespace loom::search {
namespace {

bool is_attr(const spec::ExprPtr& e, const std::vector<spec::AttrParam>& attrs) {
  if (!e || e->kind != spec::ExprKind::Name) return false;
  for (const spec::AttrParam& a : attrs)
    if (a.name == e->name) return true;
  return false;
}

// The form as a LayoutForm when it makes exactly one degree update by an attribute.
std::optional<std::pair<spec::DegreeUpdate, LayoutForm>> single_update(const spec::ParallelDecl& form) {
  std::optional<spec::DegreeUpdate> found;
  for (const spec::ParallelStmt& s : form.stmts) {
    if (!s.update) continue;
    if (found) return std::nullopt;
    found = *s.update;
  }
  if (!found || !is_attr(found->amount, form.attrs)) return std::nullopt;
  const bool has_dim = found->degree == spec::DegreeKind::D || found->degree == spec::DegreeKind::P;
  if (has_dim && !is_attr(found->dim, form.attrs)) return std::nullopt;
  return std::make_pair(*found, LayoutForm{form.name, has_dim ? found->dim->name : "", found->amount->name});
}

// The callee's attribute each argument of an application binds, mapped to the name of the
// caller's attribute passed there; nullopt when an argument is anything but a caller's attribute.
std::optional<std::map<std::string, std::string>> bound_attrs(const spec::Term& apply, const spec::ParallelDecl& callee,
                                                              const std::vector<spec::AttrParam>& caller_attrs) {
  std::map<std::string, std::string> out;
  bool named = false;
  for (std::size_t i = 0; i < apply.attrs.size(); ++i) {
    const spec::AttrArg& arg = apply.attrs[i];
    if (!is_attr(arg.value, caller_attrs)) return std::nullopt;
    named = named || !arg.name.empty();
    if (!arg.name.empty())
      out[arg.name] = arg.value->name;
    else if (!named && i < callee.attrs.size())
      out[callee.attrs[i].name] = arg.value->name;
    else
      return std::nullopt;
  }
  return out;
}

std::optional<SwapForm> as_swap(const spec::Library& library, const spec::FusedDecl& fused, const LayoutForm& join,
                                const LayoutForm& split) {
  const spec::Term* outer = fused.body.get();
  if (fused.inputs.size() != 1 || fused.attrs.size() != 3 || !outer || outer->kind != spec::TermKind::Apply || outer->name != split.op ||
      outer->args.size() != 1)
    return std::nullopt;
  const spec::Term* inner = outer->args[0].get();
  if (!inner || inner->kind != spec::TermKind::Apply || inner->name != join.op || inner->args.size() != 1 ||
      inner->args[0]->kind != spec::TermKind::Var || inner->args[0]->name != fused.inputs[0].name)
    return std::nullopt;
  const auto to = bound_attrs(*outer, *library.find_parallel(split.op), fused.attrs);
  const auto from = bound_attrs(*inner, *library.find_parallel(join.op), fused.attrs);
  if (!to || !from || !to->count(split.dim_attr) || !to->count(split.degree_attr) || !from->count(join.dim_attr) ||
      !from->count(join.degree_attr) || to->at(split.degree_attr) != from->at(join.degree_attr) ||
      to->at(split.dim_attr) == from->at(join.dim_attr))
    return std::nullopt;
  return SwapForm{fused.name, from->at(join.dim_attr), to->at(split.dim_attr), to->at(split.degree_attr)};
}

}  // namespace

ReshardForms reshard_forms(const spec::Library& library) {
  std::optional<LayoutForm> sum, join, copy, split;
  for (const spec::ParallelDecl* form : library.parallel_forms()) {
    const auto found = single_update(*form);
    if (!found) continue;
    const auto& [update, layout] = *found;
    std::optional<LayoutForm>* slot = nullptr;
    if (update.degree == spec::DegreeKind::V && !update.multiply) slot = &sum;
    if (update.degree == spec::DegreeKind::D) slot = update.multiply ? &split : &join;
    if (update.degree == spec::DegreeKind::R && update.multiply) slot = &copy;
    if (slot && !*slot) *slot = layout;
  }
  const std::pair<const std::optional<LayoutForm>*, const char*> needed[] = {
      {&sum, "V /= degree (adding up partial sums)"},
      {&join, "D[dim] /= degree (putting pieces together)"},
      {&copy, "R *= degree (making copies)"},
      {&split, "D[dim] *= degree (cutting a dimension)"},
  };
  for (const auto& [form, update] : needed)
    if (!*form)
      throw LoomError("the spec library has no parallel form whose only degree update is " + std::string(update) +
                      " by its attributes: values cannot be moved between parallel shapes without one");
  ReshardForms out{*sum, *join, *copy, *split, std::nullopt};
  for (const spec::FusedDecl* fused : library.fused_forms())
    if (!out.swap) out.swap = as_swap(library, *fused, out.join, out.split);
  return out;
}

}  // namespace loom::search
