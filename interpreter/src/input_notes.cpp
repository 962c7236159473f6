#include "loom/interpreter/input_notes.hpp"

#include <set>
#include <string>

namespace loom::spec {
namespace {

// Marks in `summed` the positions of `name`'s dimensions that reads within `e` index by a name in
// `sums` (the names the enclosing sums bind).
void mark_summed(const Expr& e, const std::string& name, std::multiset<std::string>& sums, std::vector<bool>& summed) {
  if (e.kind == ExprKind::Reduce && e.name == "sum")
    for (const auto& v : e.vars) sums.insert(v.name);
  if (e.kind == ExprKind::Read && e.name == name) {
    const std::size_t rank = summed.size();
    bool after_pack = false;
    for (std::size_t k = 0; k < e.indices.size(); ++k) {
      const IndexArg& arg = e.indices[k];
      if (arg.is_pack()) {
        after_pack = true;
        continue;
      }
      const std::size_t from_end = e.indices.size() - k;
      const std::size_t position = after_pack ? rank - from_end : k;
      if ((after_pack && from_end > rank) || position >= rank) continue;
      if (arg.expr->kind == ExprKind::Name && sums.count(arg.expr->name)) summed[position] = true;
    }
  }
  for (const auto& a : e.args)
    if (a) mark_summed(*a, name, sums, summed);
  for (const auto& i : e.indices)
    if (i.expr) mark_summed(*i.expr, name, sums, summed);
  if (e.fallback) mark_summed(*e.fallback, name, sums, summed);
  if (e.kind == ExprKind::Reduce && e.name == "sum")
    for (const auto& v : e.vars) sums.erase(sums.find(v.name));
}

}  // namespace

const InputParam* declared_input(const Library& library, const std::string& op, std::size_t slot) {
  const OpDecl* decl = library.find_op(op);
  return decl && slot < decl->inputs.size() ? &decl->inputs[slot] : nullptr;
}

std::optional<std::size_t> indexed_table(const OpDecl& op, const InputParam& declared) {
  const Note* index = declared.note("index");
  if (!index) return std::nullopt;
  for (std::size_t t = 0; t < op.inputs.size(); ++t)
    if (op.inputs[t].name == index->arg) return t;
  return std::nullopt;
}

std::vector<bool> summed_dimensions(const OpDecl& op, std::size_t input, std::size_t rank) {
  std::vector<bool> summed(rank, false);
  if (input >= op.inputs.size()) return summed;
  std::multiset<std::string> sums;
  for (const OpStmt& st : op.stmts)
    if (st.expr && st.kind != OpStmtKind::Require) mark_summed(*st.expr, op.inputs[input].name, sums, summed);
  return summed;
}

std::int64_t summed_extent(const OpDecl& op, std::size_t input, const std::vector<std::int64_t>& dims) {
  const std::vector<bool> summed = summed_dimensions(op, input, dims.size());
  std::int64_t extent = 1;
  bool any = false;
  for (std::size_t d = 0; d < dims.size(); ++d)
    if (summed[d]) {
      extent *= dims[d];
      any = true;
    }
  return any ? extent : 0;
}

}  // namespace loom::spec
