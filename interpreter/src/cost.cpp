#include "loom/interpreter/cost.hpp"

#include "loom/interpreter/gradient.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace loom::spec {
namespace {

constexpr double kElementBytes = 4;

// The index slots `n` reads through or computes with.
void collect_used_slots(const CNode& n, std::set<int>& slots) {
  if (n.op == COp::Index) slots.insert(n.slot);
  if (n.op == COp::Read)
    for (const IndexCalc& i : n.index) {
      if (i.slot >= 0) slots.insert(i.slot);
      for (const CNode& e : i.expr) collect_used_slots(e, slots);
    }
  for (const auto& c : n.children) collect_used_slots(c, slots);
}

// How many points of the statement's result share one evaluation of the reduction `n`: the
// extents of the result's indices it does not depend on. A kernel computes softmax's row sum once
// per row, not once per element of the row.
double points_sharing(const CNode& n, const Statement& st) {
  std::set<int> used;
  collect_used_slots(n, used);
  double shared = 1;
  for (int slot : st.lhs_slots)
    if (slot >= 0 && static_cast<std::size_t>(slot) < st.slot_extents.size() && !used.count(slot))
      shared *= static_cast<double>(st.slot_extents[static_cast<std::size_t>(slot)]);
  return shared;
}

// Where reductions are counted once for the points sharing them: the statement (none: at every
// point), and how many points share each evaluation of the enclosing reduction, if any.
struct Sharing {
  const Statement* st = nullptr;
  double enclosing = 1;

  // Within the reduction `n`: its sharing, and how many evaluations of the enclosing one share
  // each of its own.
  std::pair<Sharing, double> inside(const CNode& n) const {
    const double shared = st ? std::max(points_sharing(n, *st), enclosing) : 1;
    return {{st, shared}, shared / enclosing};
  }
};

// The position among the sum `n`'s indices of the one it only looks up, or -1: in `sum(r)
// select(e == r, x, 0)`, `e` not reading r, the one term where r is e is added (an embedding's
// row). The hand-written lookup kernels gather that row rather than scanning them all, and their
// gradient adds into that row alone: one step in r. (An operator a user writes so, compiled from
// its spec, does scan them; measuring it gives its own time.)
int looked_up_index(const CNode& n) {
  const CNode& body = n.children[0];
  if (n.reducer != Reducer::Sum || body.op != COp::Select || body.children[0].op != COp::Eq || body.children[2].op != COp::Const ||
      body.children[2].constant != 0)
    return -1;
  for (std::size_t k = 0; k < n.reduce_slots.size(); ++k)
    for (int side = 0; side < 2; ++side) {
      const CNode& index = body.children[0].children[static_cast<std::size_t>(side)];
      std::set<int> key_slots;
      collect_used_slots(body.children[0].children[static_cast<std::size_t>(1 - side)], key_slots);
      if (index.op == COp::Index && index.slot == n.reduce_slots[k] && !key_slots.count(n.reduce_slots[k])) return static_cast<int>(k);
    }
  return -1;
}

// The steps of the reduction `n`: the product of its extents, but for the index it looks up.
double reduce_steps(const CNode& n) {
  const int looked_up = looked_up_index(n);
  double steps = 1;
  for (std::size_t k = 0; k < n.reduce_slots.size(); ++k)
    if (static_cast<int>(k) != looked_up) steps *= static_cast<double>(n.reduce_extents[k]);
  return steps;
}

// Arithmetic per point of the statement's result.
double node_flops(const CNode& n, const Sharing& sharing) {
  double own = 0;
  switch (n.op) {
    case COp::Const:
    case COp::Index:
    case COp::Read: own = 0; break;
    default: own = 1; break;
  }
  const auto [within, shared] = n.op == COp::Reduce ? sharing.inside(n) : std::pair<Sharing, double>{sharing, 1};
  double children = 0;
  for (const auto& c : n.children) children += node_flops(c, within);
  if (n.op == COp::Reduce) return reduce_steps(n) * (children + 1) / shared;
  return own + children;
}

// The buffers and bare index slots (-1 where computed) of the reads within `n`.
using ReadSites = std::set<std::pair<int, std::vector<int>>>;
void collect_reads(const CNode& n, ReadSites& sites) {
  if (n.op == COp::Read) {
    std::vector<int> slots;
    for (const IndexCalc& i : n.index) slots.push_back(i.slot);
    sites.emplace(n.buffer, std::move(slots));
  }
  for (const auto& c : n.children) collect_reads(c, sites);
}

void collect_index_slots(const CNode& n, std::set<int>& slots) {
  if (n.op == COp::Index) slots.insert(n.slot);
  for (const auto& c : n.children) collect_index_slots(c, slots);
}

// The read within `n` that slides a window, or nullptr: one with an index computed from both a
// summed index (one of `summed`) and an index of the result, as a convolution's `x[i * stride + r]`.
const CNode* window_read(const CNode& n, const std::vector<int>& summed) {
  if (n.op == COp::Read)
    for (const IndexCalc& i : n.index) {
      if (i.slot >= 0) continue;
      std::set<int> slots;
      for (const CNode& e : i.expr) collect_index_slots(e, slots);
      bool of_sum = false, of_result = false;
      for (int slot : slots) (std::find(summed.begin(), summed.end(), slot) != summed.end() ? of_sum : of_result) = true;
      if (of_sum && of_result) return &n;
    }
  for (const auto& c : n.children)
    if (const CNode* found = window_read(c, summed)) return found;
  return nullptr;
}

bool reads_through_a_window(const CNode& n, const std::vector<int>& summed) { return window_read(n, summed) != nullptr; }

// Whether `n` multiplies two values read from different buffers or places (not a square).
bool multiplies_reads(const CNode& n) {
  if (n.op == COp::Mul && n.children.size() == 2) {
    ReadSites left, right;
    collect_reads(n.children[0], left);
    collect_reads(n.children[1], right);
    if (!left.empty() && !right.empty() && left != right) return true;
  }
  for (const auto& c : n.children)
    if (multiplies_reads(c)) return true;
  return false;
}

// Whether `n` calls a function that libraries evaluate by a series or a table rather than one
// instruction (not sqrt, abs, max or min).
bool calls_a_transcendental(const CNode& n) {
  if (n.op != COp::Call) return false;
  switch (n.fn) {
    case Function::Exp:
    case Function::Log:
    case Function::Tanh:
    case Function::Sigmoid:
    case Function::Erf:
    case Function::Pow: return true;
    default: return false;
  }
}

// The heaviest shape of the reductions within `n`, or elementwise (transcendental where it calls
// such a function) when there are none.
pcg::KernelShape shape_of(const CNode& n) {
  auto shape = calls_a_transcendental(n) ? pcg::KernelShape::Transcendental : pcg::KernelShape::Elementwise;
  if (n.op == COp::Reduce && !(n.reduce_slots.size() == 1 && looked_up_index(n) == 0)) {
    shape = pcg::KernelShape::Reduction;
    if (n.reducer == Reducer::Sum && multiplies_reads(n))
      shape = reads_through_a_window(n, n.reduce_slots) ? pcg::KernelShape::Convolution : pcg::KernelShape::Contraction;
  }
  for (const auto& c : n.children) shape = std::max(shape, shape_of(c));
  return shape;
}

// The convolution-shaped reduction within `n` (a sum of a product of reads, one of them sliding a
// window), or nullptr.
const CNode* convolution_sum(const CNode& n) {
  if (n.op == COp::Reduce && n.reducer == Reducer::Sum && multiplies_reads(n) && window_read(n, n.reduce_slots)) return &n;
  for (const auto& c : n.children)
    if (const CNode* found = convolution_sum(c)) return found;
  return nullptr;
}

// The value of an index expression of constants alone (sizes and attributes, as compiled), or
// nullopt where it reads an index or a value.
std::optional<std::int64_t> constant_index(const CNode& e) {
  if (e.op == COp::Const) return static_cast<std::int64_t>(e.constant);
  if (e.children.size() != 2) return std::nullopt;
  const auto a = constant_index(e.children[0]), b = constant_index(e.children[1]);
  if (!a || !b) return std::nullopt;
  switch (e.op) {
    case COp::Add: return *a + *b;
    case COp::Sub: return *a - *b;
    case COp::Mul: return *a * *b;
    case COp::Div: return *b != 0 ? std::optional<std::int64_t>(*a / *b) : std::nullopt;
    default: return std::nullopt;
  }
}

// How many values each index slot in `e` takes there: its extent, or fewer where it appears only
// divided by a constant (a grouped convolution's `f / (o / groups)`).
void slot_ranges(const CNode& e, const Statement& st, std::map<int, double>& ranges) {
  const auto widen = [&](int slot, double values) {
    double& r = ranges[slot];
    r = std::max(r, values);
  };
  const auto extent = [&](int slot) { return static_cast<double>(st.slot_extents.at(static_cast<std::size_t>(slot))); };
  if (e.op == COp::Div && e.children.size() == 2 && e.children[0].op == COp::Index) {
    if (const auto divisor = constant_index(e.children[1]); divisor && *divisor >= 1) {
      widen(e.children[0].slot, std::ceil(extent(e.children[0].slot) / static_cast<double>(*divisor)));
      return;
    }
  }
  if (e.op == COp::Index) widen(e.slot, extent(e.slot));
  for (const auto& c : e.children) slot_ranges(c, st, ranges);
}

// A sum of a product of two reads, at any indices.
bool is_product_of_two_reads(const CNode& n) {
  return n.op == COp::Reduce && n.reducer == Reducer::Sum && n.children[0].op == COp::Mul && n.children[0].children[0].op == COp::Read &&
         n.children[0].children[1].op == COp::Read;
}

// A sum of a product of two reads, each addressed by bare indices: run as a matrix product, whose
// gradient is two more products of the same size.
bool is_contraction(const CNode& n) {
  if (n.op != COp::Reduce || n.reducer != Reducer::Sum || n.children[0].op != COp::Mul) return false;
  const auto bare_read = [](const CNode& r) {
    return r.op == COp::Read && !r.has_fallback &&
           std::all_of(r.index.begin(), r.index.end(), [](const IndexCalc& i) { return i.slot >= 0; });
  };
  return bare_read(n.children[0].children[0]) && bare_read(n.children[0].children[1]);
}

// The buffers whose gradients are not wanted (inputs taking none), by buffer; empty: every one's.
using Unwanted = std::vector<bool>;

// Whether `n` reads a buffer whose gradient is wanted.
bool reads_wanted(const CNode& n, const Unwanted& unwanted) {
  if (n.op == COp::Read && (static_cast<std::size_t>(n.buffer) >= unwanted.size() || !unwanted[static_cast<std::size_t>(n.buffer)]))
    return true;
  return std::any_of(n.children.begin(), n.children.end(), [&](const CNode& c) { return reads_wanted(c, unwanted); });
}

// Arithmetic of one point's derived gradient through `n`: twice the forward's for each operation
// (its partial derivative, and the product with the incoming gradient), and for a contraction its
// two gradient products, plus the product itself again where the gradient reads its value
// (`value_read`: a factor of another product, a function's argument, or an operand of such a
// value). At a statement's root, a function of a single value (relu's `max(.., 0)`, a sigmoid)
// takes its derivative from the output the forward pass kept, as the hand-written kernels do, so
// its argument is not computed again (a compiled kernel does compute it again where a comparison
// needs it: for `max(x·w, 0)` written as a user's operator it runs one product more than counted).
double node_gradient_flops(const CNode& n, const Sharing& sharing, const Unwanted& unwanted, bool value_read, bool root = false) {
  // No gradient flows into what reads only unwanted buffers: the backward computes its value
  // where the gradient of something else reads it, else nothing.
  if (!unwanted.empty() && reads_values(n) && !reads_wanted(n, unwanted)) return value_read ? node_flops(n, sharing) : 0;
  const auto operand = [&](std::size_t i) { return unwanted.empty() || reads_wanted(n.children[0].children[i], unwanted) ? 1 : 0; };
  if (is_contraction(n)) return ((value_read ? 1 : 0) + operand(0) + operand(1)) * node_flops(n, sharing);
  // A convolution's product through a window: one gradient product per factor taking one, as its
  // kernel skips the other (with both, what the generic count below gives: twice the forward).
  if (!unwanted.empty() && is_product_of_two_reads(n)) return (operand(0) + operand(1)) * node_flops(n, sharing);
  const bool of_one_value =
      root && n.op == COp::Call && std::count_if(n.children.begin(), n.children.end(), [](const CNode& c) { return reads_values(c); }) == 1;
  const auto [within, shared] = n.op == COp::Reduce ? sharing.inside(n) : std::pair<Sharing, double>{sharing, 1};
  double children = 0;
  for (std::size_t i = 0; i < n.children.size(); ++i)
    children += node_gradient_flops(n.children[i], within, unwanted, !of_one_value && (value_read || gradient_reads_operand(n, i)));
  const double own = n.op == COp::Const || n.op == COp::Index || n.op == COp::Read ? 0 : 2;
  if (n.op == COp::Reduce) return reduce_steps(n) * (children + own) / shared;
  return own + children;
}

double shard_elements(const pcg::ParallelShape& s) {
  double n = 1;
  for (std::size_t i = 0; i < s.dims.size(); ++i) n *= static_cast<double>(s.dims[i]) / static_cast<double>(s.D[i] * s.P[i]);
  return n;
}

// `shared`: reductions counted once for the points sharing them, as kernels run them; else at
// every point, as the loops are written (what the kernel shape is read from).
double statement_flops(const Program& program, const Statement& st, bool shared = true) {
  double elements = 1;
  for (auto d : program.buffers[static_cast<std::size_t>(st.target)].dims) elements *= static_cast<double>(d);
  return elements * node_flops(st.body, {shared ? &st : nullptr, 1});
}

}  // namespace

double total_flops(const Program& program) {
  double total = 0;
  for (const auto& st : program.statements) total += statement_flops(program, st);
  return total;
}

double gradient_flops(const Program& program, const std::vector<bool>& wanted) {
  Unwanted unwanted;
  if (!wanted.empty()) {
    unwanted.assign(program.buffers.size(), false);
    for (std::size_t i = 0; i < program.input_buffers.size() && i < wanted.size(); ++i)
      unwanted[static_cast<std::size_t>(program.input_buffers[i])] = !wanted[i];
  }
  double total = 0;
  for (const auto& st : program.statements) {
    const Buffer& target = program.buffers[static_cast<std::size_t>(st.target)];
    double elements = 1;
    for (auto d : target.dims) elements *= static_cast<double>(d);
    total += elements * node_gradient_flops(st.body, {&st, 1}, unwanted, false, true);
    if (target.kind == BufferKind::Let) total += statement_flops(program, st);  // computed again for the gradient
  }
  return total;
}

namespace {

// The statement doing the most arithmetic, counted as its loops are written; nullptr where none.
const Statement* heaviest_statement(const Program& program) {
  const Statement* found = nullptr;
  double heaviest = -1;
  for (const auto& st : program.statements)
    if (const double flops = statement_flops(program, st, false); flops > heaviest) {
      heaviest = flops;
      found = &st;
    }
  return found;
}

// Per task, the elements of the windows the heaviest statement's convolution unfolds: the values
// its window read's index slots take together. A task holds the part of the result its output
// piece covers and, where the summed indices are split (partial sums), its share of them. And the
// inputs its product reads.
struct Unfolding {
  double elements = 0;
  std::uint64_t inputs = 0;  // bit i: input i is read by the product
};

Unfolding unfolding(const Program& program, const std::vector<pcg::ParallelShape>& outputs, double pieces) {
  const Statement* st = heaviest_statement(program);
  const CNode* sum = st ? convolution_sum(st->body) : nullptr;
  if (!sum) return {};
  Unfolding out;
  ReadSites sites;
  collect_reads(*sum, sites);
  for (const auto& [buffer, slots] : sites)
    for (std::size_t i = 0; i < program.input_buffers.size() && i < 64; ++i)
      if (program.input_buffers[i] == buffer) out.inputs |= std::uint64_t{1} << i;
  const CNode* read = window_read(*sum, sum->reduce_slots);
  std::map<int, double> ranges;
  for (const IndexCalc& i : read->index) {
    if (i.slot >= 0) ranges[i.slot] = std::max(ranges[i.slot], static_cast<double>(st->slot_extents.at(static_cast<std::size_t>(i.slot))));
    for (const CNode& e : i.expr) slot_ranges(e, *st, ranges);
  }
  double elements = 1;
  for (const auto& [slot, values] : ranges) elements *= values;
  const auto target = std::find(program.output_buffers.begin(), program.output_buffers.end(), st->target);
  const auto k = static_cast<std::size_t>(target - program.output_buffers.begin());
  if (target == program.output_buffers.end() || k >= outputs.size()) {
    out.elements = elements / pieces;
    return out;
  }
  const pcg::ParallelShape& o = outputs[k];
  elements /= static_cast<double>(o.V);
  // A piece of fewer values of a slot than the read takes (a grouped convolution's filters split
  // finer than its groups) still unfolds a whole value's windows.
  for (std::size_t d = 0; d < st->lhs_slots.size() && d < o.D.size(); ++d)
    if (const auto it = ranges.find(st->lhs_slots[d]); it != ranges.end())
      elements /= std::min(static_cast<double>(o.D[d] * o.P[d]), it->second);
  out.elements = elements;
  return out;
}

}  // namespace

pcg::KernelShape kernel_shape(const Program& program) {
  const Statement* st = heaviest_statement(program);
  return st ? shape_of(st->body) : pcg::KernelShape::Elementwise;
}

pcg::TaskCost task_cost(const Program& program, const std::vector<pcg::ParallelShape>& inputs,
                        const std::vector<pcg::ParallelShape>& outputs) {
  pcg::TaskCost cost;
  double pieces = 1;
  if (!outputs.empty()) {
    const auto& o = outputs[0];
    pieces = static_cast<double>(o.V);
    for (std::size_t i = 0; i < o.D.size(); ++i) pieces *= static_cast<double>(o.D[i] * o.P[i]);
  }
  cost.flops = total_flops(program) / pieces;
  cost.backward_flops = gradient_flops(program) / pieces;
  cost.shape = program.shape;
  if (cost.shape == pcg::KernelShape::Convolution) {
    const Unfolding u = unfolding(program, outputs, pieces);
    cost.unfolded_elements = u.elements;
    cost.unfolding_inputs = u.inputs;
  }
  for (const auto& in : inputs) cost.bytes_read += shard_elements(in) * kElementBytes;
  for (const auto& out : outputs) cost.bytes_written += shard_elements(out) * kElementBytes;
  return cost;
}

}  // namespace loom::spec
