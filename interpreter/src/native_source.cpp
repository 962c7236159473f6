#include "loom/interpreter/native_source.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "loom/interpreter/gradient.hpp"
#include "loom/pcg/diagnostic.hpp"

namespace loom::spec {
namespace {

std::string slot(int s) { return "s" + std::to_string(s); }

std::string real_literal(double v) {
  if (std::isnan(v)) return "T(__builtin_nan(\"\"))";
  if (std::isinf(v)) return v > 0 ? "T(__builtin_inf())" : "T(-__builtin_inf())";
  char text[64];
  std::snprintf(text, sizeof text, "%.17g", v);
  return "T(" + std::string(text) + ")";
}

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

void used_slots(const CNode& n, std::set<int>& used) {
  if (n.op == COp::Index) used.insert(n.slot);
  for (const IndexCalc& calc : n.index) {
    if (calc.slot >= 0) used.insert(calc.slot);
    for (const CNode& e : calc.expr) used_slots(e, used);
  }
  for (const CNode& c : n.children) used_slots(c, used);
}

void bound_slots(const CNode& n, std::set<int>& bound) {
  bound.insert(n.reduce_slots.begin(), n.reduce_slots.end());
  for (const CNode& c : n.children) bound_slots(c, bound);
}

// The index slots a reduction's value depends on from outside it.
std::set<int> free_slots(const CNode& reduce) {
  std::set<int> used, bound;
  used_slots(reduce, used);
  bound_slots(reduce, bound);
  std::set<int> free;
  std::set_difference(used.begin(), used.end(), bound.begin(), bound.end(), std::inserter(free, free.end()));
  return free;
}

// A reduction computed once per iteration of the statement's first `depth` loops.
struct Hoist {
  const CNode* node = nullptr;
  std::size_t depth = 0;
  std::string value, adjoint;
};

class Emitter {
 public:
  Emitter(const Program& program, NativeType type) : program_(program), type_(type) {}

  std::string run() {
    const bool single = type_ == NativeType::Float;
    out_ << "// " << program_.op->name << ", generated from its comprehension\n";
    for (const Buffer& b : program_.buffers) out_ << "// buffer " << b.name << " of rank " << b.dims.size() << "\n";
    out_ << "typedef " << (single ? "float" : "double") << " T;\n";
    out_ << "typedef long long I;\n";
    out_ << "typedef " << (single ? "unsigned int" : "unsigned long long") << " U;\n";
    // x where c holds, else +0, by masking its bits: a select the compiler keeps branch-free, even
    // in a reduction.
    out_ << "static inline T keep(bool c, T x) { return __builtin_bit_cast(T, __builtin_bit_cast(U, x) & (U)-(U)c); }\n";
    out_ << "static inline I floor_div(I a, I b) { return b == 0 ? 0 : a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }\n";
    out_ << "static inline I floor_mod(I a, I b) { return b == 0 ? 0 : ((a % b) + b) % b; }\n";
    out_ << "static inline I int_abs(I a) { return a < 0 ? -a : a; }\n";
    out_ << "static inline I int_min(I a, I b) { return b < a ? b : a; }\n";
    out_ << "static inline I int_max(I a, I b) { return a < b ? b : a; }\n";
    const std::string f = single ? "f" : "";
    // exp and log have vector versions in glibc's libmvec, which loops then call.
    for (const char* fn : {"exp", "log"})
      out_ << "extern \"C\" T " << fn << f << "(T) __attribute__((__simd__(\"notinbranch\"), __nothrow__, __const__));\n"
           << "static inline T m_" << fn << "(T a) { return " << fn << f << "(a); }\n";
    for (const char* fn : {"tanh", "sqrt", "fabs", "erf"})
      out_ << "static inline T m_" << fn << "(T a) { return __builtin_" << fn << f << "(a); }\n";
    out_ << "static inline T m_pow(T a, T b) { return __builtin_pow" << f << "(a, b); }\n";
    out_ << "static inline T m_sigmoid(T a) { return T(1) / (T(1) + m_exp(-a)); }\n";
    out_ << "typedef void (*Gemm)(int, int, I, I, I, const T*, const T*, T*);\n";
    out_ << "static inline T* scratch(I n) { return (T*)__builtin_calloc(n > 0 ? n : 1, sizeof(T)); }\n";

    // The loops run in functions whose buffers are `__restrict` parameters: GCC trusts that of a
    // parameter, not of a local pointer, and loops over several buffers vectorize only then.
    const std::string forward = captured([&] {
      for (const Statement& st : program_.statements) {
        const bool output = program_.buffers[static_cast<std::size_t>(st.target)].kind == BufferKind::Output;
        if (output) out_ << "  if (!lets_only)\n";
        forward_statement(st);
      }
    });
    const std::string backward = captured([&] {
      for (auto st = program_.statements.rbegin(); st != program_.statements.rend(); ++st) backward_statement(*st);
    });
    out_ << "static void forward_body(" << parameters("v") << ", const I* __restrict N, Gemm gemm, int lets_only) {\n"
         << sizes_as_locals() << forward << "}\n";
    out_ << "extern \"C\" void loom_forward(void* const* buffers_, const long long* sizes, void* gemm_, int lets_only) {\n";
    out_ << "  T* const* buffers = (T* const*)buffers_;\n";
    out_ << "  forward_body(" << arguments("buffers") << ", sizes, (Gemm)gemm_, lets_only);\n}\n";
    out_ << "static void backward_body(" << parameters("v") << ", " << parameters("g") << ", const I* __restrict N, Gemm gemm) {\n"
         << sizes_as_locals() << backward << "}\n";
    out_ << "extern \"C\" void loom_backward(void* const* values_, void* const* grads_, const long long* sizes, void* gemm_) {\n";
    out_ << "  T* const* values = (T* const*)values_;\n  T* const* grads = (T* const*)grads_;\n";
    out_ << "  backward_body(" << arguments("values") << ", " << arguments("grads") << ", sizes, (Gemm)gemm_);\n}\n";
    return out_.str();
  }

  const std::vector<std::int64_t>& sizes() const { return sizes_; }

 private:
  // Every buffer as a parameter named PREFIX and its number, or as its element of ARRAY.
  std::string parameters(const std::string& prefix) const {
    std::string list;
    for (std::size_t b = 0; b < program_.buffers.size(); ++b)
      list += (b ? ", T* __restrict " : "T* __restrict ") + prefix + std::to_string(b);
    return list;
  }
  std::string arguments(const std::string& array) const {
    std::string list;
    for (std::size_t b = 0; b < program_.buffers.size(); ++b) list += (b ? ", " : "") + array + "[" + std::to_string(b) + "]";
    return list;
  }

  std::string fresh(const std::string& stem) { return stem + std::to_string(next_++); }

  // A number that depends on the instance (a size, an attribute, a piece's offset), written as the
  // next of the kernel's size parameters: instances whose loops differ only in such numbers write
  // the same source, and so share one built kernel.
  std::string num(std::int64_t value) const {
    sizes_.push_back(value);
    return "n" + std::to_string(sizes_.size() - 1);
  }

  // The extent of the innermost loop or dimension of several (a row's length), or of a reduction,
  // written as it is: the compiler vectorizes and unrolls what it knows. Instances with other such
  // extents get another kernel; a vector's length stays a parameter.
  static std::string literal_size(std::int64_t value) { return "I(" + std::to_string(value) + ")"; }

  std::string sizes_as_locals() const {
    std::string locals;
    for (std::size_t k = 0; k < sizes_.size(); ++k) locals += "  const I n" + std::to_string(k) + " = N[" + std::to_string(k) + "];\n";
    return locals;
  }

  // What `emit` writes, taken out of the main stream.
  template <class Emit>
  std::string captured(Emit&& emit) {
    std::ostringstream text;
    out_.swap(text);
    emit();
    out_.swap(text);
    return text.str();
  }

 public:
  bool guarded_reads() const { return guarded_reads_; }

 private:
  // --- the statement's loops, and the reductions taken out of them

  void plan_statement(const Statement& st) {
    current_ = &st;
    hoists_.clear();
    hoisted_.clear();
    contractions_.clear();
    contracted_.clear();
    accumulators_.clear();
    accumulator_order_.clear();
    collect_hoists(st, st.body, {});
  }

  // Reads outside reductions whose element stays the same along the innermost loop (a row's
  // statistic, a scalar): their gradient is gathered in a local and added once per row.
  void plan_accumulators(const Statement& st, const CNode& n) {
    if (n.op == COp::Reduce) return;
    for (const CNode& c : n.children) plan_accumulators(st, c);
    if (n.op != COp::Read || st.lhs_slots.empty() || needs_bounds_check(n)) return;
    std::set<int> used;
    used_slots(n, used);
    const std::set<int> outer(st.lhs_slots.begin(), st.lhs_slots.end() - 1);
    if (std::all_of(used.begin(), used.end(), [&](int s) { return outer.count(s) > 0; })) {
      accumulators_[&n] = fresh("acc");
      accumulator_order_.push_back(&n);
    }
  }

  void collect_hoists(const Statement& st, const CNode& n, const std::set<int>& enclosing) {
    if (auto c = contraction(st, n)) {
      contracted_[&n] = contractions_.size();
      contractions_.push_back(std::move(*c));
      return;
    }
    std::set<int> inner = enclosing;
    inner.insert(n.reduce_slots.begin(), n.reduce_slots.end());
    for (const CNode& c : n.children) collect_hoists(st, c, inner);
    if (n.op != COp::Reduce) return;
    const std::set<int> free = free_slots(n);
    if (std::any_of(free.begin(), free.end(), [&](int s) { return enclosing.count(s) > 0; })) return;
    std::size_t depth = 0;
    for (std::size_t k = 0; k < st.lhs_slots.size(); ++k)
      if (free.count(st.lhs_slots[k])) depth = k + 1;
    if (depth == st.lhs_slots.size()) return;
    Hoist h{&n, depth, fresh("h"), fresh("dh")};
    hoisted_[&n] = hoists_.size();
    hoists_.push_back(h);
  }

  std::string target_offset(const Statement& st) const {
    std::string offset = "0";
    for (std::size_t k = 0; k < st.lhs_slots.size(); ++k) {
      const auto extent = program_.buffers[static_cast<std::size_t>(st.target)].dims[k];
      offset = "(" + offset + ") * " + (k > 0 && k + 1 == st.lhs_slots.size() ? literal_size(extent) : num(extent)) + " + " +
               slot(st.lhs_slots[k]);
    }
    return offset;
  }

  // Opens the statement's loops, calling `at_depth(d)` inside the d-th (0: before the first),
  // `innermost()` in the last and `closing(d)` at the end of the d-th.
  template <class AtDepth, class Innermost, class Closing>
  void loops(const Statement& st, AtDepth&& at_depth, Innermost&& innermost, Closing&& closing) {
    out_ << "  {\n";
    at_depth(0);
    for (std::size_t k = 0; k < st.lhs_slots.size(); ++k) {
      const int s = st.lhs_slots[k];
      const std::int64_t extent = st.slot_extents[static_cast<std::size_t>(s)];
      out_ << "  for (I " << slot(s) << " = 0; " << slot(s) << " < "
           << (k > 0 && k + 1 == st.lhs_slots.size() ? literal_size(extent) : num(extent)) << "; ++" << slot(s) << ") {\n";
      at_depth(k + 1);
    }
    innermost();
    for (std::size_t k = st.lhs_slots.size(); k-- > 0;) {
      closing(k + 1);
      out_ << "  }\n";
    }
    closing(0);
    out_ << "  }\n";
  }

  void forward_statement(const Statement& st) {
    plan_statement(st);
    out_ << "  { // " << one_line(st.body.text) << "\n";
    for (const Contraction& c : contractions_) contract(c);
    loops(
        st, [&](std::size_t depth) { compute_hoists(depth, false); },
        [&] { out_ << "    v" << st.target << "[" << target_offset(st) << "] = " << value(st.body) << ";\n"; }, [](std::size_t) {});
    for (const Contraction& c : contractions_)
      out_ << "    __builtin_free(" << c.name << "a); __builtin_free(" << c.name << "b); __builtin_free(" << c.name << "c);\n";
    out_ << "  }\n";
  }

  void compute_hoists(std::size_t depth, bool with_adjoints) {
    for (const Hoist& h : hoists_) {
      if (h.depth != depth) continue;
      out_ << "    const T " << h.value << " = " << reduction(*h.node) << ";\n";
      if (with_adjoints) out_ << "    T " << h.adjoint << " = 0;\n";
    }
  }

  void backward_statement(const Statement& st) {
    plan_statement(st);
    plan_accumulators(st, st.body);
    out_ << "  { // gradient of " << one_line(st.body.text) << "\n";
    for (const Contraction& c : contractions_) {
      contract(c, value_use(st.body, c.node) == Use::Needed);
      out_ << "    T* " << c.name << "d = scratch(" << num(c.size()) << ");\n";  // zeroed
    }
    loops(
        st,
        [&](std::size_t depth) {
          compute_hoists(depth, true);
          if (depth + 1 == st.lhs_slots.size())
            for (const CNode* read : accumulator_order_) out_ << "    T " << accumulators_.at(read) << " = 0;\n";
        },
        [&] {
          // A point whose gradient is zero adds nothing: the interpreter skips it, and here its
          // additions are zeros, which keeps the loop free of branches.
          const std::string at = target_offset(st);
          out_ << "    { const T d = g" << st.target << "[" << at << "];\n";
          out_ << "    const bool live = d != T(0);\n";
          live_ = "live";
          backprop(st.body, "d", "v" + std::to_string(st.target) + "[" + at + "]");
          live_.clear();
          out_ << "    }\n";
        },
        [&](std::size_t depth) {
          for (auto h = hoists_.rbegin(); h != hoists_.rend(); ++h)
            if (h->depth == depth) {
              out_ << "    if (" << h->adjoint << " != T(0)) {\n";
              backprop_reduction(*h->node, h->adjoint, h->value);
              out_ << "    }\n";
            }
          if (depth + 1 == st.lhs_slots.size())
            for (const CNode* read : accumulator_order_) out_ << "    " << element("g", *read) << " += " << accumulators_.at(read) << ";\n";
        });
    for (const Contraction& c : contractions_) contract_backward(c);
    out_ << "  }\n";
  }

  // --- contractions: `sum(k) a[..] * b[..]` over bare indices in range, whose other indices are
  // the statement's. Computed before the statement's loops as batched GEMM on packed copies of the
  // operands into `<name>c` (batch, rows, columns), which the loops read; the backward gathers
  // their gradient in `<name>d` and runs two GEMMs after the loops.

  struct Contraction {
    const CNode* node = nullptr;
    const CNode* a = nullptr;
    const CNode* b = nullptr;
    std::vector<int> batch, rows, cols, sums;  // slots: read by both, by a alone, by b alone, summed
    std::int64_t q = 1, m = 1, n = 1, k = 1;   // their extents
    std::string name;

    std::int64_t size() const { return q * m * n; }
  };

  std::optional<Contraction> contraction(const Statement& st, const CNode& node) {
    if (node.op != COp::Reduce || node.reducer != Reducer::Sum || node.children[0].op != COp::Mul) return std::nullopt;
    const CNode& a = node.children[0].children[0];
    const CNode& b = node.children[0].children[1];
    std::set<int> in_a, in_b;
    for (const auto& [read, seen] : {std::pair{&a, &in_a}, std::pair{&b, &in_b}}) {
      if (read->op != COp::Read || read->has_fallback) return std::nullopt;
      const auto& dims = program_.buffers[static_cast<std::size_t>(read->buffer)].dims;
      for (std::size_t k = 0; k < read->index.size(); ++k) {
        const int s = read->index[k].slot;
        if (s < 0 || st.slot_extents[static_cast<std::size_t>(s)] != dims[k] || !seen->insert(s).second) return std::nullopt;
      }
    }
    Contraction c;
    c.node = &node;
    c.a = &a;
    c.b = &b;
    const std::set<int> free = free_slots(node);
    for (int s : st.lhs_slots) {
      if (!free.count(s)) continue;
      (in_a.count(s) && in_b.count(s) ? c.batch : in_a.count(s) ? c.rows : c.cols).push_back(s);
    }
    for (int s : node.reduce_slots) {
      if (!in_a.count(s) || !in_b.count(s)) return std::nullopt;
      c.sums.push_back(s);
    }
    // Every index of the operands accounted for, and none outside the statement's.
    if (c.batch.size() + c.rows.size() + c.cols.size() != free.size() || in_a.size() != c.batch.size() + c.rows.size() + c.sums.size() ||
        in_b.size() != c.batch.size() + c.cols.size() + c.sums.size())
      return std::nullopt;
    c.q = extent(c.batch), c.m = extent(c.rows), c.n = extent(c.cols), c.k = extent(c.sums);
    if (c.q * c.m * c.n * c.k == 0) return std::nullopt;
    c.name = fresh("x");
    return c;
  }

  std::int64_t extent(const std::vector<int>& slots) const {
    std::int64_t n = 1;
    for (int s : slots) n *= current_->slot_extents[static_cast<std::size_t>(s)];
    return n;
  }

  // The row-major position of the slots' values among the group's.
  std::string flat(const std::vector<int>& slots) const {
    std::string at = "0";
    for (int s : slots) at = "(" + at + ") * " + num(current_->slot_extents[static_cast<std::size_t>(s)]) + " + " + slot(s);
    return at;
  }

  // Emits `body` inside loops over the slots of every group, in order.
  void over(const std::vector<std::vector<int>>& groups, const std::string& body) {
    for (const auto& group : groups)
      for (int s : group)
        out_ << "    for (I " << slot(s) << " = 0; " << slot(s) << " < " << num(current_->slot_extents[static_cast<std::size_t>(s)])
             << "; ++" << slot(s) << ")\n";
    out_ << "      " << body << "\n";
  }

  std::string packed(const std::string& name, const std::vector<int>& batch, const std::vector<int>& outer,
                     const std::vector<int>& inner) const {
    return name + "[((" + flat(batch) + ") * " + num(extent(outer)) + " + " + flat(outer) + ") * " + num(extent(inner)) + " + " +
           flat(inner) + "]";
  }

  std::string element(const std::string& prefix, const CNode& read) const {
    return prefix + std::to_string(read.buffer) + "[" + address(read).first + "]";
  }

  std::string batched_gemm(const std::string& trans, std::int64_t q, std::int64_t m, std::int64_t n, std::int64_t k, const std::string& a,
                           std::int64_t a_size, const std::string& b, std::int64_t b_size, const std::string& c) const {
    return "    for (I q = 0; q < " + num(q) + "; ++q) gemm(" + trans + ", " + num(m) + ", " + num(n) + ", " + num(k) + ", " + a +
           " + q * " + num(a_size) + ", " + b + " + q * " + num(b_size) + ", " + c + " + q * " + num(m * n) + ");\n";
  }

  // Packs the operands into `<name>a` (batch, rows, sums) and `<name>b` (batch, sums, columns), and
  // computes `<name>c`.
  void contract(const Contraction& c, bool with_product = true) {
    const std::string a = c.name + "a", b = c.name + "b", out = c.name + "c";
    out_ << "    T* " << a << " = scratch(" << num(c.q * c.m * c.k) << ");\n";
    out_ << "    T* " << b << " = scratch(" << num(c.q * c.k * c.n) << ");\n";
    out_ << "    T* " << out << " = scratch(" << num(c.size()) << ");\n";
    over({c.batch, c.rows, c.sums}, packed(a, c.batch, c.rows, c.sums) + " = " + element("v", *c.a) + ";");
    over({c.batch, c.sums, c.cols}, packed(b, c.batch, c.sums, c.cols) + " = " + element("v", *c.b) + ";");
    if (with_product) out_ << batched_gemm("0, 0", c.q, c.m, c.n, c.k, a, c.m * c.k, b, c.k * c.n, out);
  }

  // d a = d c . b^T and d b = a^T . d c, added to the operands' gradients.
  void contract_backward(const Contraction& c) {
    const std::string a = c.name + "a", b = c.name + "b", d = c.name + "d", da = c.name + "da", db = c.name + "db";
    out_ << "    T* " << da << " = scratch(" << num(c.q * c.m * c.k) << ");\n";
    out_ << batched_gemm("0, 1", c.q, c.m, c.k, c.n, d, c.m * c.n, b, c.k * c.n, da);
    over({c.batch, c.rows, c.sums}, element("g", *c.a) + " += " + packed(da, c.batch, c.rows, c.sums) + ";");
    out_ << "    T* " << db << " = scratch(" << num(c.q * c.k * c.n) << ");\n";
    out_ << batched_gemm("1, 0", c.q, c.k, c.n, c.m, a, c.m * c.k, d, c.m * c.n, db);
    over({c.batch, c.sums, c.cols}, element("g", *c.b) + " += " + packed(db, c.batch, c.sums, c.cols) + ";");
    for (const char* part : {"a", "b", "c", "d", "da", "db"}) out_ << "    __builtin_free(" << c.name << part << ");\n";
  }

  enum class Use { Absent, PassesThrough, Needed };

  // Whether the backward pass reads `target`'s value (a subtree of `n`): a product's factor, a
  // quotient's denominator or a function's argument is read, a sum's term is not.
  Use value_use(const CNode& n, const CNode* target) const {
    if (&n == target) return Use::PassesThrough;
    for (std::size_t i = 0; i < n.children.size(); ++i) {
      const Use below = value_use(n.children[i], target);
      if (below != Use::PassesThrough) {
        if (below == Use::Needed) return below;
        continue;
      }
      // A hoisted sum's gradient is spread from its value's row, which it then needs.
      if (n.op == COp::Reduce && hoisted_.count(&n)) return Use::Needed;
      return gradient_reads_operand(n, i) ? Use::Needed : Use::PassesThrough;
    }
    return Use::Absent;
  }

  std::string contracted_element(const Contraction& c, const std::string& part) const {
    return packed(c.name + part, c.batch, c.rows, c.cols);
  }

  // --- integer index expressions, as the interpreter's eval_index computes them

  std::string index(const CNode& n) const {
    auto arg = [&](std::size_t k) { return index(n.children[k]); };
    switch (n.op) {
      case COp::Const:
        return n.sized ? num(static_cast<std::int64_t>(n.constant)) : "I(" + std::to_string(static_cast<std::int64_t>(n.constant)) + ")";
      case COp::Index: return slot(n.slot);
      case COp::Neg: return "(-" + arg(0) + ")";
      case COp::Not: return "I(" + arg(0) + " == 0)";
      case COp::Select: return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
      case COp::Call:
        if (n.fn == Function::Abs) return "int_abs(" + arg(0) + ")";
        if (n.fn == Function::Min) return "int_min(" + arg(0) + ", " + arg(1) + ")";
        if (n.fn == Function::Max) return "int_max(" + arg(0) + ", " + arg(1) + ")";
        break;
      case COp::Div: return "floor_div(" + arg(0) + ", " + arg(1) + ")";
      case COp::Mod: return "floor_mod(" + arg(0) + ", " + arg(1) + ")";
      default: break;
    }
    static const std::map<COp, const char*> binary = {{COp::Add, "+"}, {COp::Sub, "-"},  {COp::Mul, "*"}, {COp::Lt, "<"},
                                                      {COp::Le, "<="}, {COp::Gt, ">"},   {COp::Ge, ">="}, {COp::Eq, "=="},
                                                      {COp::Ne, "!="}, {COp::And, "&&"}, {COp::Or, "||"}};
    if (auto it = binary.find(n.op); it != binary.end()) return "I(" + arg(0) + " " + it->second + " " + arg(1) + ")";
    throw LoomError("'" + n.text + "' is not an integer index expression");
  }

  // The read's element offset, and the condition that it lies inside its tensor ("" when every
  // index is a loop slot within the dimension).
  std::pair<std::string, std::string> address(const CNode& read) const {
    const auto& dims = program_.buffers[static_cast<std::size_t>(read.buffer)].dims;
    std::string offset = "0", inside;
    for (std::size_t k = 0; k < read.index.size(); ++k) {
      const IndexCalc& calc = read.index[k];
      const std::string i = calc.slot >= 0 ? slot(calc.slot) : index(calc.expr[0]);
      const bool safe = index_in_range(read, k);
      guarded_reads_ = guarded_reads_ || !safe;
      if (!safe) inside += std::string(inside.empty() ? "" : " && ") + "(I)(" + i + ") >= 0 && (I)(" + i + ") < " + num(dims[k]);
      offset = "(" + offset + ") * " + (k > 0 && k + 1 == read.index.size() ? literal_size(dims[k]) : num(dims[k])) + " + (" + i + ")";
    }
    return {offset, inside};
  }

  // Whether index k of the read is a loop slot within its dimension, needing no bounds check.
  bool index_in_range(const CNode& read, std::size_t k) const {
    const int s = read.index[k].slot;
    return s >= 0 && current_->slot_extents[static_cast<std::size_t>(s)] <= program_.buffers[static_cast<std::size_t>(read.buffer)].dims[k];
  }

  bool needs_bounds_check(const CNode& read) const {
    for (std::size_t k = 0; k < read.index.size(); ++k)
      if (!index_in_range(read, k)) return true;
    return false;
  }

  // --- values

  std::string value(const CNode& n) {
    auto arg = [&](std::size_t k) { return value(n.children[k]); };
    auto truth = [](const std::string& b) { return "T(" + b + ")"; };
    switch (n.op) {
      case COp::Const: return n.sized ? "T(" + num(static_cast<std::int64_t>(n.constant)) + ")" : real_literal(n.constant);
      case COp::Index: return "T(" + slot(n.slot) + ")";
      case COp::Read: {
        const auto [offset, inside] = address(n);
        const std::string element = "v" + std::to_string(n.buffer) + "[" + offset + "]";
        if (inside.empty()) return element;
        return "((" + inside + ") ? " + element + " : " + (n.has_fallback ? arg(0) : std::string("T(0)")) + ")";
      }
      case COp::Reduce:
        if (auto it = contracted_.find(&n); it != contracted_.end()) return contracted_element(contractions_[it->second], "c");
        if (auto it = hoisted_.find(&n); it != hoisted_.end()) return hoists_[it->second].value;
        return reduction(n);
      case COp::Neg: return "(-" + arg(0) + ")";
      case COp::Not: return truth(arg(0) + " == T(0)");
      case COp::Select:
        // A branch that reads a tensor reads it only where the condition says.
        guarded_reads_ = guarded_reads_ || reads_values(n.children[1]) || reads_values(n.children[2]);
        return "((" + arg(0) + " != T(0)) ? " + arg(1) + " : " + arg(2) + ")";
      case COp::And: return truth("(" + arg(0) + " != T(0)) && (" + arg(1) + " != T(0))");
      case COp::Or: return truth("(" + arg(0) + " != T(0)) || (" + arg(1) + " != T(0))");
      case COp::Call: return call(n);
      case COp::Mod: throw LoomError("'" + n.text + "': '%' applies to indices, not values");
      default: break;
    }
    static const std::map<COp, const char*> arithmetic = {{COp::Add, "+"}, {COp::Sub, "-"}, {COp::Mul, "*"}, {COp::Div, "/"}};
    if (auto it = arithmetic.find(n.op); it != arithmetic.end()) return "(" + arg(0) + " " + it->second + " " + arg(1) + ")";
    // As the interpreter orders values: a <= b is !(b < a), which a NaN satisfies.
    switch (n.op) {
      case COp::Lt: return truth(arg(0) + " < " + arg(1));
      case COp::Gt: return truth(arg(1) + " < " + arg(0));
      case COp::Le: return truth("!(" + arg(1) + " < " + arg(0) + ")");
      case COp::Ge: return truth("!(" + arg(0) + " < " + arg(1) + ")");
      case COp::Eq: return truth(arg(0) + " == " + arg(1));
      default: return truth(arg(0) + " != " + arg(1));
    }
  }

  std::string call(const CNode& n) {
    const std::string a = value(n.children[0]);
    switch (n.fn) {
      case Function::Exp: return "m_exp(" + a + ")";
      case Function::Log: return "m_log(" + a + ")";
      case Function::Tanh: return "m_tanh(" + a + ")";
      case Function::Sigmoid: return "m_sigmoid(" + a + ")";
      case Function::Sqrt: return "m_sqrt(" + a + ")";
      case Function::Abs: return "m_fabs(" + a + ")";
      case Function::Erf: return "m_erf(" + a + ")";
      case Function::Pow: return "m_pow(" + a + ", " + value(n.children[1]) + ")";
      case Function::Max: return "({ const T a_ = " + a + ", b_ = " + value(n.children[1]) + "; a_ < b_ ? b_ : a_; })";
      case Function::Min: return "({ const T a_ = " + a + ", b_ = " + value(n.children[1]) + "; b_ < a_ ? b_ : a_; })";
    }
    return a;
  }

  std::string reduce_loops(const CNode& n) const {
    std::string loops;
    for (std::size_t k = 0; k < n.reduce_slots.size(); ++k) {
      const std::string s = slot(n.reduce_slots[k]);
      loops += "for (I " + s + " = 0; " + s + " < " +
               (k + 1 == n.reduce_slots.size() ? literal_size(n.reduce_extents[k]) : num(n.reduce_extents[k])) + "; ++" + s + ") ";
    }
    return loops;
  }

  // The reduction's value, computed where it stands.
  std::string reduction(const CNode& n) {
    const std::string acc = fresh("r"), element = fresh("e");
    std::string init = n.reducer == Reducer::Sum ? "T(0)" : n.reducer == Reducer::Max ? "-__builtin_inf()" : "__builtin_inf()";
    std::string step = n.reducer == Reducer::Sum   ? acc + " += " + element + ";"
                       : n.reducer == Reducer::Max ? acc + " = " + acc + " < " + element + " ? " + element + " : " + acc + ";"
                                                   : acc + " = " + element + " < " + acc + " ? " + element + " : " + acc + ";";
    // Lanes of a max or min skip NaNs as the sequential loop does, so their maximum is the same.
    const std::string simd = n.reducer == Reducer::Sum
                                 ? ""
                                 : "_Pragma(\"omp simd reduction(" + std::string(n.reducer == Reducer::Max ? "max" : "min") + ":" + acc +
                                       ") collapse(" + std::to_string(n.reduce_slots.size()) + ")\") ";
    return "({ T " + acc + " = " + init + "; " + simd + reduce_loops(n) + "{ const T " + element + " = " + value(n.children[0]) + "; " +
           step + " } " + acc + "; })";
  }

  // --- gradients, as evaluate_gradient derives them

  // `self`, when given, is the node's own value, already computed (a statement's target element).
  void backprop(const CNode& n, const std::string& adjoint, const std::string& self = "") {
    if (!reads_values(n)) return;
    switch (n.op) {
      case COp::Read: {
        // A read with an accumulator needs no bounds check (plan_accumulators).
        if (const auto accumulator = accumulators_.find(&n); accumulator != accumulators_.end()) {
          out_ << "    " << accumulator->second << " += " << sink(adjoint) << ";\n";
          return;
        }
        const auto [offset, inside] = address(n);
        const std::string add = "g" + std::to_string(n.buffer) + "[" + offset + "] += " + sink(adjoint) + ";\n";
        if (inside.empty()) {
          out_ << "    " << add;
          return;
        }
        out_ << "    if (" << inside << ") " << add;
        if (n.has_fallback) {
          out_ << "    else {\n";
          backprop(n.children[0], adjoint);
          out_ << "    }\n";
        }
        return;
      }
      case COp::Reduce:
        if (auto it = contracted_.find(&n); it != contracted_.end()) {
          out_ << "    " << contracted_element(contractions_[it->second], "d") << " += " << sink(adjoint) << ";\n";
          return;
        }
        if (auto it = hoisted_.find(&n); it != hoisted_.end()) {
          out_ << "    " << hoists_[it->second].adjoint << " += " << sink(adjoint) << ";\n";
          return;
        }
        return backprop_reduction(n, adjoint, self);
      case COp::Neg: return backprop(n.children[0], bind("-" + adjoint));
      case COp::Add: backprop(n.children[0], adjoint); return backprop(n.children[1], adjoint);
      case COp::Sub: backprop(n.children[0], adjoint); return backprop(n.children[1], bind("-" + adjoint));
      case COp::Mul: {
        // A factor's value is computed only where the other factor passes a gradient on.
        const bool to_a = reads_values(n.children[0]), to_b = reads_values(n.children[1]);
        const std::string a = to_b ? bind(value(n.children[0])) : "", b = to_a ? bind(value(n.children[1])) : "";
        if (to_a) backprop(n.children[0], bind(adjoint + " * " + b));
        if (to_b) backprop(n.children[1], bind(adjoint + " * " + a));
        return;
      }
      case COp::Div: {
        const bool to_a = reads_values(n.children[0]), to_b = reads_values(n.children[1]);
        const std::string a = to_b ? bind(value(n.children[0])) : "", b = bind(value(n.children[1]));
        if (to_a) backprop(n.children[0], bind(adjoint + " / " + b));
        if (to_b) backprop(n.children[1], bind("-" + adjoint + " * " + a + " / (" + b + " * " + b + ")"));
        return;
      }
      case COp::Select: {
        const std::string taken = bind_bool(value(n.children[0]) + " != T(0)");
        only_if(taken, [&] { backprop(n.children[1], adjoint); });
        only_if("!" + taken, [&] { backprop(n.children[2], adjoint); });
        return;
      }
      case COp::Call: return backprop_call(n, adjoint, self);
      default: return;
    }
  }

  void backprop_call(const CNode& n, const std::string& adjoint, const std::string& self) {
    const std::string a = bind(value(n.children[0]));
    const std::string b = n.children.size() > 1 ? bind(value(n.children[1])) : "T(0)";
    if (n.fn == Function::Max || n.fn == Function::Min) {
      const std::string second = bind_bool(n.fn == Function::Max ? a + " < " + b : b + " < " + a);
      only_if(second, [&] { backprop(n.children[1], adjoint); });
      only_if("!" + second, [&] { backprop(n.children[0], adjoint); });
      return;
    }
    std::string da = "T(0)", db = "T(0)";
    switch (n.fn) {
      case Function::Exp: da = self.empty() ? "m_exp(" + a + ")" : self; break;
      case Function::Log: da = "T(1) / " + a; break;
      case Function::Tanh: da = self.empty() ? "T(1) - m_tanh(" + a + ") * m_tanh(" + a + ")" : "T(1) - " + self + " * " + self; break;
      case Function::Sigmoid:
        da = self.empty() ? "m_sigmoid(" + a + ") * (T(1) - m_sigmoid(" + a + "))" : self + " * (T(1) - " + self + ")";
        break;
      case Function::Sqrt: da = "T(0.5) / m_sqrt(" + a + ")"; break;
      case Function::Abs: da = "(" + a + " > T(0) ? T(1) : " + a + " < T(0) ? T(-1) : T(0))"; break;
      case Function::Erf: da = real_literal(1.1283791670955126) + " * m_exp(-" + a + " * " + a + ")"; break;
      case Function::Pow:
        da = b + " * m_pow(" + a + ", " + b + " - T(1))";
        db = "(" + a + " > T(0) ? m_pow(" + a + ", " + b + ") * m_log(" + a + ") : T(0))";
        break;
      default: break;
    }
    // A zero derivative passes nothing on, as the interpreter skips it.
    const std::string da_name = bind(da);
    only_if(da_name + " != T(0)", [&] { backprop(n.children[0], bind(adjoint + " * " + da_name)); });
    if (n.children.size() > 1) {
      const std::string db_name = bind(db);
      only_if(db_name + " != T(0)", [&] { backprop(n.children[1], bind(adjoint + " * " + db_name)); });
    }
  }

  // A reduction's gradient: every point for a sum, the first point attaining the extreme for
  // max and min. `self`, when given, is the extreme the forward pass computed.
  void backprop_reduction(const CNode& n, const std::string& adjoint, const std::string& self) {
    if (n.reducer == Reducer::Sum) {
      out_ << "    " << reduce_loops(n) << "{\n";
      backprop(n.children[0], adjoint);
      out_ << "    }\n";
      return;
    }
    // The interpreter keeps the first point, then any point beyond the best so far: the first
    // point when it is NaN (nothing is beyond a NaN), else the first attaining the extreme of the
    // points that are not NaN. That extreme is the statement's value, or one vectorized pass
    // (`reduction`); a second vectorized pass finds where it is first attained.
    for (std::int64_t extent : n.reduce_extents)
      if (extent <= 0) return;
    const std::string extreme = fresh("m"), found = fresh("found"), first = fresh("e");
    out_ << "    { const T " << extreme << " = " << (self.empty() ? reduction(n) : self) << ";\n";
    out_ << "    bool " << found << " = false;\n";
    for (int s : n.reduce_slots) out_ << "    I " << found << "_" << slot(s) << " = 0;\n";
    out_ << "    {\n";
    for (int s : n.reduce_slots) out_ << "    const I " << slot(s) << " = 0;\n";
    out_ << "    const T " << first << " = " << value(n.children[0]) << ";\n";
    out_ << "    " << found << " = " << first << " != " << first << ";\n";
    out_ << "    }\n";
    // The first point equal to the extreme, as the least row-major position: a vectorized pass.
    std::int64_t points = 1;
    std::string position = "I(0)";
    for (std::size_t k = 0; k < n.reduce_slots.size(); ++k) {
      points *= n.reduce_extents[k];
      position = "(" + position + ") * " + num(n.reduce_extents[k]) + " + " + slot(n.reduce_slots[k]);
    }
    const std::string at = fresh("at"), here = fresh("p");
    out_ << "    if (!" << found << ") {\n";
    const std::string all_points = num(points);
    out_ << "    I " << at << " = " << all_points << ";\n";
    out_ << "    _Pragma(\"omp simd reduction(min:" << at << ") collapse(" << n.reduce_slots.size() << ")\") " << reduce_loops(n)
         << "{ const I " << here << " = " << position << "; " << at << " = " << value(n.children[0]) << " == " << extreme << " && " << here
         << " < " << at << " ? " << here << " : " << at << "; }\n";
    out_ << "    if (" << at << " < " << all_points << ") {\n";
    out_ << "    " << found << " = true;\n";
    for (std::size_t k = n.reduce_slots.size(); k-- > 0;) {
      const std::string extent = num(n.reduce_extents[k]);
      out_ << "    " << found << "_" << slot(n.reduce_slots[k]) << " = " << at << " % " << extent << "; " << at << " /= " << extent
           << ";\n";
    }
    out_ << "    } }\n";
    // Should the two passes round the element differently, the sequential search decides.
    out_ << "    if (!" << found << ") {\n";
    const std::string best = fresh("best"), element = fresh("e");
    out_ << "    T " << best << " = 0;\n";
    out_ << "    " << reduce_loops(n) << "{ const T " << element << " = " << value(n.children[0]) << ";\n";
    out_ << "      if (!" << found << " || " << (n.reducer == Reducer::Max ? best + " < " + element : element + " < " + best) << ") { "
         << found << " = true; " << best << " = " << element << ";";
    for (int s : n.reduce_slots) out_ << " " << found << "_" << slot(s) << " = " << slot(s) << ";";
    out_ << " } }\n    }\n";
    out_ << "    {\n";
    for (int s : n.reduce_slots) out_ << "    const I " << slot(s) << " = " << found << "_" << slot(s) << ";\n";
    backprop(n.children[0], adjoint);
    out_ << "    } }\n";
  }

  // What a gradient sink adds: the adjoint where the point is live, else zero.
  std::string sink(const std::string& adjoint) const { return live_.empty() ? adjoint : "keep(" + live_ + ", " + adjoint + ")"; }

  // Runs `emit` with the sinks live only where `condition` also holds.
  template <class Emit>
  void only_if(const std::string& condition, Emit&& emit) {
    const std::string outer = live_;
    live_ = bind_bool(outer.empty() ? condition : outer + " && " + condition);
    emit();
    live_ = outer;
  }

  std::string bind_bool(const std::string& expr) {
    const std::string name = fresh("c");
    out_ << "    const bool " << name << " = " << expr << ";\n";
    return name;
  }

  std::string bind(const std::string& expr) {
    const std::string name = fresh("t");
    out_ << "    const T " << name << " = " << expr << ";\n";
    return name;
  }

  const Program& program_;
  NativeType type_;
  std::ostringstream out_;
  int next_ = 0;
  mutable bool guarded_reads_ = false;
  mutable std::vector<std::int64_t> sizes_;
  std::string live_;  // when the gradient sinks add: empty for always
  std::map<const CNode*, std::string> accumulators_;
  std::vector<const CNode*> accumulator_order_;  // in the order they were planned: the source must not depend on addresses
  const Statement* current_ = nullptr;
  std::vector<Hoist> hoists_;
  std::map<const CNode*, std::size_t> hoisted_;
  std::vector<Contraction> contractions_;
  std::map<const CNode*, std::size_t> contracted_;
};

}  // namespace

NativeSource native_source(const Program& program, NativeType type) {
  Emitter emitter(program, type);
  NativeSource source;
  source.code = emitter.run();
  source.guarded_reads = emitter.guarded_reads();
  source.sizes = emitter.sizes();
  return source;
}

}  // namespace loom::spec
