#include "loom/interpreter/piece_program.hpp"

#include <algorithm>
#include <optional>
#include <string>

namespace loom::spec {
namespace {

// The dimension symbol a constant was compiled from (a name of the scope that is not an
// attribute), or null for a literal or an attribute.
const std::string* dimension_symbol(const Program& program, const CNode& n) {
  if (n.op != COp::Const || !program.scope.values.count(n.text)) return nullptr;
  const auto& attrs = program.op->attrs;
  if (std::any_of(attrs.begin(), attrs.end(), [&](const AttrParam& a) { return a.name == n.text; })) return nullptr;
  return &n.text;
}

bool node_reads_sizes_or_positions(const Program& program, const CNode& n) {
  if (n.op == COp::Index || dimension_symbol(program, n)) return true;
  for (const IndexCalc& calc : n.index)
    if (!calc.expr.empty() && node_reads_sizes_or_positions(program, calc.expr[0])) return true;
  return std::any_of(n.children.begin(), n.children.end(), [&](const CNode& c) { return node_reads_sizes_or_positions(program, c); });
}

// The part of its logical range an index covers.
struct Span {
  std::int64_t lo = 0, extent = 0;
};

class Placer {
 public:
  Placer(const Program& logical, const PiecePlacement& where) : logical_(logical), boxes_(logical.buffers.size()) {
    for (std::size_t i = 0; i < logical.input_buffers.size() && i < where.inputs.size(); ++i)
      boxes_[static_cast<std::size_t>(logical.input_buffers[i])] = where.inputs[i];
    for (std::size_t k = 0; k < logical.output_buffers.size() && k < where.outputs.size(); ++k)
      boxes_[static_cast<std::size_t>(logical.output_buffers[k])] = where.outputs[k];
  }

  Program run() {
    Program placed = logical_;
    for (Statement& st : placed.statements) {
      const std::vector<Span> spans = slot_spans(st);
      for (std::size_t s = 0; s < spans.size(); ++s) st.slot_extents[s] = spans[s].extent;
      place(st.body, spans);
      pcg::Region box;
      for (int slot : st.lhs_slots) {
        box.lo.push_back(spans[static_cast<std::size_t>(slot)].lo);
        box.hi.push_back(box.lo.back() + spans[static_cast<std::size_t>(slot)].extent);
      }
      boxes_[static_cast<std::size_t>(st.target)] = std::move(box);
    }
    for (std::size_t b = 0; b < placed.buffers.size(); ++b)
      if (boxes_[b]) resize(placed.buffers[b], *boxes_[b]);
    return placed;
  }

 private:
  static void resize(Buffer& buffer, const pcg::Region& box) {
    for (std::size_t d = 0; d < buffer.dims.size() && d < box.lo.size(); ++d) buffer.dims[d] = box.hi[d] - box.lo[d];
    std::size_t d = 0;
    for (ShapeEntry& entry : buffer.structure)
      for (std::int64_t& size : entry.sizes) size = buffer.dims[d++];
  }

  std::vector<Span> slot_spans(const Statement& st) const {
    std::vector<std::optional<Span>> found(static_cast<std::size_t>(st.slot_count));
    const auto& target = boxes_[static_cast<std::size_t>(st.target)];
    if (target && logical_.buffers[static_cast<std::size_t>(st.target)].kind == BufferKind::Output)
      for (std::size_t k = 0; k < st.lhs_slots.size() && k < target->lo.size(); ++k)
        found[static_cast<std::size_t>(st.lhs_slots[k])] = Span{target->lo[k], target->hi[k] - target->lo[k]};
    find_in_reads(st.body, found);
    std::vector<Span> spans;
    for (std::size_t s = 0; s < found.size(); ++s) spans.push_back(found[s].value_or(Span{0, st.slot_extents[s]}));
    return spans;
  }

  void find_in_reads(const CNode& n, std::vector<std::optional<Span>>& found) const {
    if (n.op == COp::Read) {
      const auto& box = boxes_[static_cast<std::size_t>(n.buffer)];
      for (std::size_t k = 0; k < n.index.size(); ++k) {
        const IndexCalc& calc = n.index[k];
        if (calc.slot >= 0 && box && k < box->lo.size() && !found[static_cast<std::size_t>(calc.slot)])
          found[static_cast<std::size_t>(calc.slot)] = Span{box->lo[k], box->hi[k] - box->lo[k]};
        if (!calc.expr.empty()) find_in_reads(calc.expr[0], found);
      }
    }
    for (const CNode& c : n.children) find_in_reads(c, found);
  }

  // Reductions range over their indices' parts; an index's value reads as its logical position.
  static void place(CNode& n, const std::vector<Span>& spans) {
    if (n.op == COp::Index) {
      // Every piece gets its shift, the first one's 0 too: the pieces' programs then differ only in
      // numbers, and share one compiled kernel.
      const std::int64_t offset = spans[static_cast<std::size_t>(n.slot)].lo;
      CNode shift;
      shift.op = COp::Const;
      shift.constant = static_cast<double>(offset);
      shift.sized = true;
      shift.text = std::to_string(offset);
      CNode sum;
      sum.op = COp::Add;
      sum.text = n.text;
      sum.children.push_back(std::move(n));
      sum.children.push_back(std::move(shift));
      n = std::move(sum);
      return;
    }
    for (std::size_t k = 0; k < n.reduce_slots.size(); ++k) n.reduce_extents[k] = spans[static_cast<std::size_t>(n.reduce_slots[k])].extent;
    for (IndexCalc& calc : n.index)
      if (!calc.expr.empty()) place(calc.expr[0], spans);
    for (CNode& c : n.children) place(c, spans);
  }

  const Program& logical_;
  std::vector<std::optional<pcg::Region>> boxes_;  // per buffer, the box of its logical value it covers
};

}  // namespace

bool reads_sizes_or_positions(const Program& program) {
  return std::any_of(program.statements.begin(), program.statements.end(),
                     [&](const Statement& st) { return node_reads_sizes_or_positions(program, st.body); });
}

Program place_piece(const Program& logical, const PiecePlacement& where) { return Placer(logical, where).run(); }

}  // namespace loom::spec
