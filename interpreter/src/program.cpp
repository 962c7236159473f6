#include "loom/interpreter/program.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "loom/interpreter/cost.hpp"

namespace loom::spec {

std::string dims_to_string(const std::vector<std::int64_t>& dims) {
  std::ostringstream os;
  os << "[";
  for (std::size_t i = 0; i < dims.size(); ++i) os << (i ? ", " : "") << dims[i];
  os << "]";
  return os.str();
}

namespace {

COp compiled_op(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return COp::Add;
    case BinaryOp::Sub: return COp::Sub;
    case BinaryOp::Mul: return COp::Mul;
    case BinaryOp::Div: return COp::Div;
    case BinaryOp::Mod: return COp::Mod;
    case BinaryOp::Lt: return COp::Lt;
    case BinaryOp::Le: return COp::Le;
    case BinaryOp::Gt: return COp::Gt;
    case BinaryOp::Ge: return COp::Ge;
    case BinaryOp::Eq: return COp::Eq;
    case BinaryOp::Ne: return COp::Ne;
    case BinaryOp::And: return COp::And;
    case BinaryOp::Or: return COp::Or;
  }
  return COp::Add;
}

struct IndexBinding {
  std::vector<int> slots;
  bool pack = false;
};

class Compiler {
 public:
  Compiler(const OpDecl& op, const pcg::AttrMap& attrs, const std::vector<std::vector<std::int64_t>>& input_dims)
      : op_(op), attrs_(attrs), input_dims_(input_dims) {
    program_.op = &op;
  }

  Program run() {
    bind_attributes();
    bind_inputs();
    for (const auto& st : op_.stmts) {
      if (st.kind != OpStmtKind::Require) continue;
      if (eval_int(*st.expr, program_.scope) == 0)
        fail(st.loc, "requirement '" + expr_to_string(*st.expr) + "' does not hold" + bindings_text());
    }
    for (const auto& out : op_.outputs) declare_output(out);
    for (const auto& st : op_.stmts) {
      if (st.kind != OpStmtKind::Require) compile_statement(st);
    }
    for (std::size_t i = 0; i < op_.outputs.size(); ++i) {
      if (!defined_outputs_.count(op_.outputs[i].name)) fail(op_.loc, "output '" + op_.outputs[i].name + "' is never defined");
    }
    return std::move(program_);
  }

 private:
  [[noreturn]] void fail(const SourceLocation& where, const std::string& message) const {
    throw LoomError({{where, op_.name + ": " + message}});
  }

  std::string bindings_text() const {
    std::ostringstream os;
    bool first = true;
    for (const auto& [name, value] : program_.scope.values) {
      os << (first ? " (with " : ", ") << name << " = " << value;
      first = false;
    }
    for (const auto& [name, dims] : program_.scope.packs) {
      os << (first ? " (with " : ", ") << "*" << name << " = " << dims_to_string(dims);
      first = false;
    }
    if (!first) os << ")";
    return os.str();
  }

  void bind_attributes() {
    for (const auto& attr : attrs_) {
      const std::string& name = attr.first;
      if (std::none_of(op_.attrs.begin(), op_.attrs.end(), [&](const AttrParam& a) { return a.name == name; }))
        fail(op_.loc, "has no attribute '" + name + "'");
    }
    for (const auto& a : op_.attrs) {
      auto it = attrs_.find(a.name);
      if (it == attrs_.end()) fail(a.loc, "attribute '" + a.name + "' is not given");
      if (a.domain && std::find(a.domain->begin(), a.domain->end(), it->second) == a.domain->end())
        fail(a.loc, "attribute " + a.name + " = " + std::to_string(it->second) + " is outside its domain");
      program_.scope.values[a.name] = it->second;
    }
  }

  // Pack lengths fixed by `require rank(p) == EXPR` where EXPR depends only on attributes.
  void bind_rank_requirements() {
    for (const auto& st : op_.stmts) {
      if (st.kind != OpStmtKind::Require || st.expr->kind != ExprKind::Binary || st.expr->binary != BinaryOp::Eq) continue;
      for (int side = 0; side < 2; ++side) {
        const Expr& r = *st.expr->args[side];
        if (r.kind != ExprKind::Call || r.name != "rank" || r.args.size() != 1 || r.args[0]->kind != ExprKind::Name) continue;
        try {
          known_pack_length_[r.args[0]->name] = eval_int(*st.expr->args[1 - side], program_.scope);
        } catch (const LoomError&) {
        }
      }
    }
  }

  std::vector<ShapeEntry> match_structure(const InputParam& in, const std::vector<std::int64_t>& dims) {
    const auto& pattern = in.shape->dims;
    std::size_t fixed = 0;
    std::vector<std::string> unknown;
    std::int64_t known_total = 0;
    for (const auto& d : pattern) {
      if (!d.is_pack()) {
        ++fixed;
      } else if (auto it = program_.scope.packs.find(d.pack_name); it != program_.scope.packs.end()) {
        known_total += static_cast<std::int64_t>(it->second.size());
      } else if (auto k = known_pack_length_.find(d.pack_name); k != known_pack_length_.end()) {
        known_total += k->second;
      } else {
        unknown.push_back(d.pack_name);
      }
    }
    auto rank = static_cast<std::int64_t>(dims.size());
    std::int64_t rest = rank - static_cast<std::int64_t>(fixed) - known_total;
    if (unknown.size() > 1)
      fail(in.loc, "input '" + in.name + "' has several packs of unknown rank; add `require rank(" + unknown[0] + ") == ...`");
    if (rest < 0 || (unknown.empty() && rest != 0))
      fail(in.loc, "input '" + in.name + "' expects rank " + (unknown.empty() ? "" : "at least ") + std::to_string(rank - rest) +
                       ", got rank " + std::to_string(rank) + " " + dims_to_string(dims));
    std::vector<ShapeEntry> entries;
    std::size_t pos = 0;
    for (const auto& d : pattern) {
      if (!d.is_pack()) {
        entries.push_back({false, {dims[pos++]}});
        continue;
      }
      std::int64_t len;
      if (auto it = program_.scope.packs.find(d.pack_name); it != program_.scope.packs.end())
        len = static_cast<std::int64_t>(it->second.size());
      else if (auto k = known_pack_length_.find(d.pack_name); k != known_pack_length_.end())
        len = k->second;
      else
        len = rest;
      std::vector<std::int64_t> sizes(dims.begin() + static_cast<std::ptrdiff_t>(pos),
                                      dims.begin() + static_cast<std::ptrdiff_t>(pos + static_cast<std::size_t>(len)));
      pos += static_cast<std::size_t>(len);
      auto [it, inserted] = program_.scope.packs.emplace(d.pack_name, sizes);
      if (!inserted && it->second != sizes)
        fail(in.loc, "input '" + in.name + "': dimensions *" + d.pack_name + " = " + dims_to_string(sizes) + " differ from " +
                         dims_to_string(it->second) + " bound earlier");
      entries.push_back({true, sizes});
    }
    return entries;
  }

  void bind_inputs() {
    if (input_dims_.size() != op_.inputs.size())
      fail(op_.loc, "expects " + std::to_string(op_.inputs.size()) + " inputs, got " + std::to_string(input_dims_.size()));
    bind_rank_requirements();
    std::vector<std::vector<ShapeEntry>> structures;
    for (std::size_t i = 0; i < op_.inputs.size(); ++i) {
      const auto& in = op_.inputs[i];
      if (!in.shape) fail(in.loc, "input '" + in.name + "' has no shape");
      structures.push_back(match_structure(in, input_dims_[i]));
      // Bare dimension symbols bind (or must agree).
      for (std::size_t k = 0; k < in.shape->dims.size(); ++k) {
        const auto& d = in.shape->dims[k];
        if (d.is_pack() || d.expr->kind != ExprKind::Name) continue;
        std::int64_t size = structures.back()[k].sizes[0];
        auto [it, inserted] = program_.scope.values.emplace(d.expr->name, size);
        if (!inserted && it->second != size)
          fail(d.expr->loc, "dimension " + d.expr->name + " of input '" + in.name + "' is " + std::to_string(size) + " but " +
                                d.expr->name + " = " + std::to_string(it->second) + " elsewhere (input shapes " + shapes_text() + ")");
      }
    }
    // Dimension expressions are checked once every symbol is bound.
    for (std::size_t i = 0; i < op_.inputs.size(); ++i) {
      const auto& in = op_.inputs[i];
      for (std::size_t k = 0; k < in.shape->dims.size(); ++k) {
        const auto& d = in.shape->dims[k];
        if (d.is_pack() || d.expr->kind == ExprKind::Name) continue;
        std::int64_t want = eval_int(*d.expr, program_.scope);
        if (want != structures[i][k].sizes[0])
          fail(d.expr->loc, "dimension '" + expr_to_string(*d.expr) + "' of input '" + in.name + "' should be " + std::to_string(want) +
                                ", got " + std::to_string(structures[i][k].sizes[0]));
      }
      Buffer b{in.name, BufferKind::Input, structures[i], input_dims_[i]};
      program_.input_buffers.push_back(static_cast<int>(program_.buffers.size()));
      program_.buffers.push_back(std::move(b));
    }
  }

  std::string shapes_text() const {
    std::string s;
    for (std::size_t i = 0; i < input_dims_.size(); ++i) s += (i ? ", " : "") + dims_to_string(input_dims_[i]);
    return s;
  }

  void declare_output(const OutputParam& out) {
    std::vector<ShapeEntry> entries;
    std::vector<std::int64_t> dims;
    for (const auto& d : out.shape.dims) {
      if (d.is_pack()) {
        auto it = program_.scope.packs.find(d.pack_name);
        if (it == program_.scope.packs.end()) fail(out.shape.loc, "output pack *" + d.pack_name + " is not bound by any input");
        entries.push_back({true, it->second});
        dims.insert(dims.end(), it->second.begin(), it->second.end());
      } else {
        std::int64_t v = eval_int(*d.expr, program_.scope);
        if (v <= 0) fail(d.expr->loc, "output dimension '" + expr_to_string(*d.expr) + "' is " + std::to_string(v) + bindings_text());
        entries.push_back({false, {v}});
        dims.push_back(v);
      }
    }
    program_.output_buffers.push_back(static_cast<int>(program_.buffers.size()));
    program_.buffers.push_back({out.name, BufferKind::Output, std::move(entries), std::move(dims)});
  }

  int find_readable(const std::string& name) const {
    for (std::size_t i = 0; i < program_.buffers.size(); ++i) {
      const auto& b = program_.buffers[i];
      if (b.name == name && b.kind != BufferKind::Output) return static_cast<int>(i);
    }
    return -1;
  }

  // The extent of index `name` from a read in which it appears bare.
  std::optional<ShapeEntry> find_extent(const Expr& e, const std::string& name, bool pack) const {
    if (e.kind == ExprKind::Read) {
      int b = find_readable(e.name);
      if (b >= 0 && program_.buffers[static_cast<std::size_t>(b)].structure.size() == e.indices.size()) {
        const auto& structure = program_.buffers[static_cast<std::size_t>(b)].structure;
        for (std::size_t k = 0; k < e.indices.size(); ++k) {
          const auto& ix = e.indices[k];
          if (pack && ix.is_pack() && ix.pack_name == name && structure[k].pack) return structure[k];
          if (!pack && !ix.is_pack() && ix.expr->kind == ExprKind::Name && ix.expr->name == name && !structure[k].pack) return structure[k];
        }
      }
    }
    for (const auto& a : e.args)
      if (auto r = find_extent(*a, name, pack)) return r;
    if (e.fallback)
      if (auto r = find_extent(*e.fallback, name, pack)) return r;
    return std::nullopt;
  }

  void compile_statement(const OpStmt& st) {
    Statement out;
    out.loc = st.loc;
    std::map<std::string, IndexBinding> env;
    std::vector<ShapeEntry> structure;
    const Buffer* target = nullptr;
    if (st.kind == OpStmtKind::Define) {
      for (std::size_t i = 0; i < program_.buffers.size(); ++i) {
        if (program_.buffers[i].kind == BufferKind::Output && program_.buffers[i].name == st.name) {
          out.target = static_cast<int>(i);
          target = &program_.buffers[i];
        }
      }
      if (!target) fail(st.loc, "'" + st.name + "' is not an output of the op");
      if (!defined_outputs_.insert(st.name).second) fail(st.loc, "output '" + st.name + "' is defined twice");
      if (target->structure.size() != st.indices.size())
        fail(st.loc, "'" + st.name + "' has " + std::to_string(target->structure.size()) + " dimension groups, the definition uses " +
                         std::to_string(st.indices.size()) + " indices");
      structure = target->structure;
    }
    for (std::size_t k = 0; k < st.indices.size(); ++k) {
      const auto& iv = st.indices[k];
      ShapeEntry entry;
      if (target) {
        entry = structure[k];
        if (entry.pack != iv.pack)
          fail(st.loc, std::string("index '") + (iv.pack ? "*" : "") + iv.name + "' of '" + st.name + "' must " +
                           (entry.pack ? "be a pack index (*" + iv.name + ")" : "not be a pack index"));
      } else {
        auto found = find_extent(*st.expr, iv.name, iv.pack);
        if (!found) fail(st.loc, "cannot tell the range of index '" + iv.name + "' of '" + st.name + "': it is never read bare");
        entry = *found;
        structure.push_back(entry);
      }
      IndexBinding binding{{}, iv.pack};
      for (std::size_t s = 0; s < entry.sizes.size(); ++s) {
        binding.slots.push_back(out.slot_count++);
        out.slot_names.push_back(iv.name);
        out.slot_extents.push_back(entry.sizes[s]);
        out.lhs_slots.push_back(binding.slots.back());
      }
      if (!env.emplace(iv.name, binding).second) fail(st.loc, "index '" + iv.name + "' appears twice on the left");
    }
    out.body = compile_value(*st.expr, env, out);
    if (st.kind == OpStmtKind::Let) {
      if (find_readable(st.name) >= 0) fail(st.loc, "'" + st.name + "' is already defined");
      std::vector<std::int64_t> dims;
      for (const auto& e : structure) dims.insert(dims.end(), e.sizes.begin(), e.sizes.end());
      out.target = static_cast<int>(program_.buffers.size());
      program_.buffers.push_back({st.name, BufferKind::Let, structure, dims});
    }
    program_.statements.push_back(std::move(out));
  }

  CNode node(COp op, const Expr& e, std::vector<CNode> children = {}) const {
    CNode n;
    n.op = op;
    n.children = std::move(children);
    n.text = expr_to_string(e);
    return n;
  }

  CNode compile_value(const Expr& e, std::map<std::string, IndexBinding>& env, Statement& st) {
    switch (e.kind) {
      case ExprKind::Number: {
        CNode n = node(COp::Const, e);
        n.constant = e.number;
        return n;
      }
      case ExprKind::Name: {
        if (auto it = env.find(e.name); it != env.end()) {
          if (it->second.pack) fail(e.loc, "pack index '" + e.name + "' cannot be used as a value");
          CNode n = node(COp::Index, e);
          n.slot = it->second.slots[0];
          return n;
        }
        if (auto it = program_.scope.values.find(e.name); it != program_.scope.values.end()) {
          CNode n = node(COp::Const, e);
          n.constant = static_cast<double>(it->second);
          n.sized = true;
          return n;
        }
        fail(e.loc, "unknown name '" + e.name + "'");
      }
      case ExprKind::Read: return compile_read(e, env, st);
      case ExprKind::Reduce: {
        CNode n = node(COp::Reduce, e);
        n.reducer = e.name == "sum" ? Reducer::Sum : e.name == "max" ? Reducer::Max : Reducer::Min;
        std::vector<std::string> added;
        for (const auto& v : e.vars) {
          if (env.count(v.name) || program_.scope.values.count(v.name))
            fail(e.loc, "reduction index '" + v.name + "' shadows an existing name");
          std::int64_t extent;
          if (v.bound) {
            extent = eval_int(*v.bound, program_.scope);
          } else {
            auto found = find_extent(*e.args[0], v.name, false);
            if (!found)
              fail(e.loc,
                   "cannot tell the range of reduction index '" + v.name + "': read it bare or write " + e.name + "(" + v.name + " < N)");
            extent = found->sizes[0];
          }
          int slot = st.slot_count++;
          st.slot_names.push_back(v.name);
          st.slot_extents.push_back(extent);
          env[v.name] = {{slot}, false};
          added.push_back(v.name);
          n.reduce_slots.push_back(slot);
          n.reduce_extents.push_back(extent);
        }
        n.children.push_back(compile_value(*e.args[0], env, st));
        for (const auto& v : e.vars) {
          if (!expr_mentions(*e.args[0], v.name)) fail(e.loc, "reduction index '" + v.name + "' is never used in its body");
        }
        for (const auto& name : added) env.erase(name);
        return n;
      }
      case ExprKind::Call: {
        if (e.name == "select") {
          if (e.args.size() != 3) fail(e.loc, "select takes 3 arguments (condition, then, else)");
          return compile_select(e, env, st);
        }
        Function f;
        int arity = 0;
        if (!function_from_name(e.name, f, arity)) fail(e.loc, "unknown function '" + e.name + "'");
        if (static_cast<int>(e.args.size()) != arity)
          fail(e.loc, e.name + " takes " + std::to_string(arity) + " argument" + (arity == 1 ? "" : "s"));
        CNode n = node(COp::Call, e);
        n.fn = f;
        for (const auto& a : e.args) n.children.push_back(compile_value(*a, env, st));
        return n;
      }
      case ExprKind::Unary: return node(e.name == "-" ? COp::Neg : COp::Not, e, {compile_value(*e.args[0], env, st)});
      case ExprKind::Ternary: return compile_select(e, env, st);
      case ExprKind::Binary:
        return node(compiled_op(e.binary), e, {compile_value(*e.args[0], env, st), compile_value(*e.args[1], env, st)});
      case ExprKind::DegreeRef: fail(e.loc, "degrees (" + e.name + ") are only meaningful in parallel forms");
    }
    fail(e.loc, "unsupported expression");
  }

  // A select whose condition depends only on attributes and dimensions is resolved here, so the
  // branch not taken costs nothing and does not constrain parallelism.
  CNode compile_select(const Expr& e, std::map<std::string, IndexBinding>& env, Statement& st) {
    const Expr& cond = *e.args[0];
    if (!depends_on_indices_or_tensors(cond, env)) {
      try {
        return compile_value(*e.args[eval_int(cond, program_.scope) != 0 ? 1 : 2], env, st);
      } catch (const LoomError&) {
      }
    }
    return node(COp::Select, e, {compile_value(cond, env, st), compile_value(*e.args[1], env, st), compile_value(*e.args[2], env, st)});
  }

  static bool depends_on_indices_or_tensors(const Expr& e, const std::map<std::string, IndexBinding>& env) {
    if (e.kind == ExprKind::Read || e.kind == ExprKind::Reduce) return true;
    if (e.kind == ExprKind::Name && env.count(e.name)) return true;
    for (const auto& a : e.args)
      if (depends_on_indices_or_tensors(*a, env)) return true;
    return false;
  }

  CNode compile_read(const Expr& e, std::map<std::string, IndexBinding>& env, Statement& st) {
    int b = find_readable(e.name);
    if (b < 0) {
      bool is_output = std::any_of(op_.outputs.begin(), op_.outputs.end(), [&](const OutputParam& o) { return o.name == e.name; });
      fail(e.loc, is_output ? "output '" + e.name + "' cannot be read" : "unknown tensor '" + e.name + "'");
    }
    const Buffer& buf = program_.buffers[static_cast<std::size_t>(b)];
    if (buf.structure.size() != e.indices.size())
      fail(e.loc, "'" + e.name + "' has " + std::to_string(buf.structure.size()) + " dimension groups, read with " +
                      std::to_string(e.indices.size()) + " indices");
    CNode n = node(COp::Read, e);
    n.buffer = b;
    for (std::size_t k = 0; k < e.indices.size(); ++k) {
      const auto& ix = e.indices[k];
      const auto& entry = buf.structure[k];
      if (ix.is_pack() != entry.pack)
        fail(e.loc, "position " + std::to_string(k) + " of '" + e.name + "' " +
                        (entry.pack ? "is a pack: read it with a pack index *i" : "is not a pack"));
      if (ix.is_pack()) {
        auto it = env.find(ix.pack_name);
        if (it == env.end() || !it->second.pack) fail(e.loc, "unbound pack index '*" + ix.pack_name + "'");
        if (it->second.slots.size() != entry.sizes.size())
          fail(e.loc, "pack index *" + ix.pack_name + " has rank " + std::to_string(it->second.slots.size()) + " but '" + e.name +
                          "' expects rank " + std::to_string(entry.sizes.size()) + " there");
        for (int s : it->second.slots) n.index.push_back({s, {}});
        continue;
      }
      if (ix.expr->kind == ExprKind::Name) {
        auto it = env.find(ix.expr->name);
        if (it != env.end()) {
          if (it->second.pack) fail(e.loc, "pack index '" + ix.expr->name + "' needs a star: *" + ix.expr->name);
          n.index.push_back({it->second.slots[0], {}});
          continue;
        }
      }
      IndexCalc calc;
      calc.expr.push_back(compile_value(*ix.expr, env, st));
      n.index.push_back(std::move(calc));
    }
    if (e.fallback) {
      n.has_fallback = true;
      n.children.push_back(compile_value(*e.fallback, env, st));
    }
    return n;
  }

  const OpDecl& op_;
  const pcg::AttrMap& attrs_;
  const std::vector<std::vector<std::int64_t>>& input_dims_;
  Program program_;
  std::map<std::string, std::int64_t> known_pack_length_;
  std::set<std::string> defined_outputs_;
};

}  // namespace

Program compile(const OpDecl& op, const pcg::AttrMap& attrs, const std::vector<std::vector<std::int64_t>>& input_dims) {
  Program program = Compiler(op, attrs, input_dims).run();
  program.shape = kernel_shape(program);
  return program;
}

}  // namespace loom::spec
