#include "loom/interpreter/parallel_rules.hpp"

#include <algorithm>
#include <optional>
#include <set>

namespace loom::spec {
namespace {

// How an expression depends on the partial-sum carriers (inputs with V > 1 and sums over a
// split index): not at all (Const), as a sum of monomials with exactly one carrier each
// (Linear, with the number of partial sums), or otherwise (Bad).
struct Lin {
  enum Kind { Zero, Const, Linear, Bad } kind = Const;
  std::int64_t factor = 1;
  std::string why;

  static Lin bad(std::string why) { return {Bad, 1, std::move(why)}; }
};

Lin combine_add(const Lin& a, const Lin& b, const std::string& text) {
  if (a.kind == Lin::Bad) return a;
  if (b.kind == Lin::Bad) return b;
  if (a.kind == Lin::Zero) return b;
  if (b.kind == Lin::Zero) return a;
  if (a.kind == Lin::Const && b.kind == Lin::Const) return a;
  if (a.kind == Lin::Linear && b.kind == Lin::Linear) {
    if (a.factor == b.factor) return a;
    return Lin::bad("'" + text + "' adds terms split into " + std::to_string(a.factor) + " and " + std::to_string(b.factor) +
                    " partial sums");
  }
  return Lin::bad("'" + text + "' adds a partial sum to a term that is not one (it would be counted once per partial sum)");
}

bool is_value_free(const Lin& l) { return l.kind == Lin::Zero || l.kind == Lin::Const; }

struct BufferDegrees {
  std::vector<std::int64_t> D, P;
  Lin lin;
};

class Derivation {
 public:
  Derivation(const Program& p, const std::vector<pcg::ParallelShape>& inputs) : program_(p), buffers_(p.buffers.size()) {
    if (inputs.size() != p.input_buffers.size()) fail("wrong number of input shapes");
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto& s = inputs[i];
      const auto& b = p.buffers[static_cast<std::size_t>(p.input_buffers[i])];
      if (s.dims != b.dims) fail("input '" + b.name + "' has shape " + s.to_string() + ", expected " + dims_to_string(b.dims));
      Lin lin = s.V > 1 ? Lin{Lin::Linear, s.V, ""} : Lin{Lin::Const, 1, ""};
      buffers_[static_cast<std::size_t>(p.input_buffers[i])] = {s.D, s.P, lin};
    }
    tasks_ = inputs.empty() ? 1 : inputs[0].tasks();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].tasks() != tasks_)
        fail("inputs spread over different numbers of tasks: '" + input_name(0) + "' " + inputs[0].to_string() + " has " +
             std::to_string(tasks_) + ", '" + input_name(i) + "' " + inputs[i].to_string() + " has " + std::to_string(inputs[i].tasks()));
    }
  }

  std::vector<pcg::ParallelShape> run() {
    for (const auto& st : program_.statements) run_statement(st);
    std::vector<pcg::ParallelShape> outs;
    for (int b : program_.output_buffers) {
      const auto& buf = program_.buffers[static_cast<std::size_t>(b)];
      const auto& deg = buffers_[static_cast<std::size_t>(b)];
      pcg::ParallelShape s;
      s.dims = buf.dims;
      s.D = deg.D;
      s.P = deg.P;
      if (deg.lin.kind == Lin::Bad) fail("output '" + buf.name + "' cannot be computed from partial sums: " + deg.lin.why);
      s.V = deg.lin.kind == Lin::Linear ? deg.lin.factor : 1;
      std::int64_t parts = s.V;
      for (auto d : s.D) parts *= d;
      if (parts > tasks_ || tasks_ % parts != 0)
        fail("output '" + buf.name + "' splits into " + std::to_string(parts) + " pieces, which does not divide the " +
             std::to_string(tasks_) + " tasks of the inputs");
      s.R = tasks_ / parts;
      outs.push_back(std::move(s));
    }
    return outs;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw LoomError(program_.op->name + ": " + message); }

  std::string input_name(std::size_t i) const { return program_.buffers[static_cast<std::size_t>(program_.input_buffers[i])].name; }

  void visit_reads(const CNode& n, const Statement& st) {
    if (n.op == COp::Read) {
      const auto& deg = buffers_[static_cast<std::size_t>(n.buffer)];
      const auto& buf = program_.buffers[static_cast<std::size_t>(n.buffer)];
      for (std::size_t k = 0; k < n.index.size(); ++k) {
        const auto& calc = n.index[k];
        std::pair<std::int64_t, std::int64_t> split{deg.D[k], deg.P[k]};
        if (calc.slot < 0) {
          if (split.first > 1 || split.second > 1)
            fail("dimension " + std::to_string(k) + " of '" + buf.name + "' is split but read at '" + n.text +
                 "' through an index expression");
          continue;
        }
        if ((split.first > 1 || split.second > 1) && buf.dims[k] != st.slot_extents[static_cast<std::size_t>(calc.slot)])
          fail("index '" + st.slot_names[static_cast<std::size_t>(calc.slot)] + "' ranges over " +
               std::to_string(st.slot_extents[static_cast<std::size_t>(calc.slot)]) + " but dimension " + std::to_string(k) + " of '" +
               buf.name + "' has " + std::to_string(buf.dims[k]) + ", so their shards would not line up");
        auto& seen = slot_split_[static_cast<std::size_t>(calc.slot)];
        if (!seen) {
          seen = split;
          first_read_[static_cast<std::size_t>(calc.slot)] = buf.name;
        } else if (*seen != split) {
          const auto& name = st.slot_names[static_cast<std::size_t>(calc.slot)];
          fail("index '" + name + "' is split " + split_text(*seen) + " in '" + first_read_[static_cast<std::size_t>(calc.slot)] +
               "' but " + split_text(split) + " in '" + buf.name + "'");
        }
      }
    }
    for (const auto& c : n.children) visit_reads(c, st);
  }

  static std::string split_text(std::pair<std::int64_t, std::int64_t> s) {
    std::string t = std::to_string(s.first) + " ways";
    if (s.second > 1) t += " (pipelined " + std::to_string(s.second) + ")";
    return t;
  }

  std::int64_t split_of(int slot) const {
    const auto& s = slot_split_[static_cast<std::size_t>(slot)];
    return s ? s->first : 1;
  }
  std::int64_t pipeline_of(int slot) const {
    const auto& s = slot_split_[static_cast<std::size_t>(slot)];
    return s ? s->second : 1;
  }

  Lin lin(const CNode& n, const Statement& st) const {
    switch (n.op) {
      case COp::Const: return n.constant == 0 ? Lin{Lin::Zero, 1, ""} : Lin{};
      case COp::Index: return {};
      case COp::Read: {
        Lin l = buffers_[static_cast<std::size_t>(n.buffer)].lin;
        if (n.has_fallback) l = combine_add(l, lin(n.children[0], st), n.text);
        return l;
      }
      case COp::Reduce: {
        Lin body = lin(n.children[0], st);
        std::int64_t degree = 1;
        for (int s : n.reduce_slots) {
          degree *= split_of(s);
          if (pipeline_of(s) > 1) return Lin::bad("'" + n.text + "' reduces over a pipelined index");
        }
        if (body.kind == Lin::Bad || body.kind == Lin::Zero) return body;
        if (degree > 1) {
          if (n.reducer != Reducer::Sum) return Lin::bad("'" + n.text + "' takes a max/min over a split index");
          return {Lin::Linear, body.kind == Lin::Linear ? body.factor * degree : degree, ""};
        }
        if (n.reducer != Reducer::Sum && body.kind == Lin::Linear) return Lin::bad("'" + n.text + "' takes a max/min of partial sums");
        return body;
      }
      case COp::Neg: return lin(n.children[0], st);
      case COp::Add:
      case COp::Sub: return combine_add(lin(n.children[0], st), lin(n.children[1], st), n.text);
      case COp::Select: {
        Lin c = lin(n.children[0], st);
        if (!is_value_free(c)) return Lin::bad("the condition of '" + n.text + "' depends on partial sums");
        return combine_add(lin(n.children[1], st), lin(n.children[2], st), n.text);
      }
      case COp::Mul: {
        Lin a = lin(n.children[0], st), b = lin(n.children[1], st);
        if (a.kind == Lin::Bad) return a;
        if (b.kind == Lin::Bad) return b;
        if (a.kind == Lin::Zero || b.kind == Lin::Zero) return {Lin::Zero, 1, ""};
        if (a.kind == Lin::Linear && b.kind == Lin::Linear) return Lin::bad("'" + n.text + "' multiplies two partial sums");
        return a.kind == Lin::Linear ? a : b;
      }
      case COp::Div: {
        Lin a = lin(n.children[0], st), b = lin(n.children[1], st);
        if (b.kind == Lin::Bad) return b;
        if (!is_value_free(b)) return Lin::bad("'" + n.text + "' divides by a partial sum");
        return a;
      }
      default: {
        for (const auto& c : n.children) {
          Lin l = lin(c, st);
          if (l.kind == Lin::Bad) return l;
          if (!is_value_free(l)) return Lin::bad("'" + n.text + "' is not linear in its partial-sum argument");
        }
        return {};
      }
    }
  }

  void run_statement(const Statement& st) {
    slot_split_.assign(static_cast<std::size_t>(st.slot_count), std::nullopt);
    first_read_.assign(static_cast<std::size_t>(st.slot_count), "");
    visit_reads(st.body, st);
    // An index used as a value or inside another read's index expression needs only its global
    // offset, which every task knows; what cannot be split is a dimension read through an
    // expression (checked above) or an index whose shards would not line up.
    BufferDegrees out;
    for (int s : st.lhs_slots) {
      out.D.push_back(split_of(s));
      out.P.push_back(pipeline_of(s));
    }
    out.lin = lin(st.body, st);
    buffers_[static_cast<std::size_t>(st.target)] = out;
  }

  const Program& program_;
  std::vector<BufferDegrees> buffers_;
  std::int64_t tasks_ = 1;
  std::vector<std::optional<std::pair<std::int64_t, std::int64_t>>> slot_split_;
  std::vector<std::string> first_read_;
};

}  // namespace

std::vector<pcg::ParallelShape> derive_output_degrees(const Program& program, const std::vector<pcg::ParallelShape>& inputs) {
  return Derivation(program, inputs).run();
}

namespace {

// Slots that read dimension `dim` of buffer `buffer` bare, per statement.
void bare_slots(const CNode& n, int buffer, std::size_t dim, std::set<int>& out) {
  if (n.op == COp::Read && n.buffer == buffer && dim < n.index.size() && n.index[dim].slot >= 0) out.insert(n.index[dim].slot);
  for (const auto& c : n.children) bare_slots(c, buffer, dim, out);
}

}  // namespace

std::vector<pcg::ParallelShape> split_inputs(const Program& program, std::size_t input, std::size_t dim, std::int64_t degree) {
  // The (buffer, dimension) pairs split along with the input's: those read bare through an index
  // that a split one is read through, in any statement, and the dimensions of a `let` computed
  // along such an index, followed through the statements that read the `let`, until none is added.
  std::set<std::pair<int, std::size_t>> split{{program.input_buffers[input], dim}};
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& st : program.statements) {
      std::set<int> slots;
      for (const auto& [buffer, d] : split) bare_slots(st.body, buffer, d, slots);
      for (std::size_t d = 0; d < st.lhs_slots.size(); ++d)
        if (split.count({st.target, d})) slots.insert(st.lhs_slots[d]);
      if (slots.empty()) continue;
      for (std::size_t b = 0; b < program.buffers.size(); ++b)
        for (std::size_t d = 0; d < program.buffers[b].dims.size(); ++d) {
          std::set<int> other;
          bare_slots(st.body, static_cast<int>(b), d, other);
          const bool shares = std::any_of(other.begin(), other.end(), [&](int s) { return slots.count(s) > 0; });
          if (shares && split.insert({static_cast<int>(b), d}).second) grew = true;
        }
      for (std::size_t d = 0; d < st.lhs_slots.size(); ++d)
        if (slots.count(st.lhs_slots[d]) && split.insert({st.target, d}).second) grew = true;
    }
  }
  std::vector<pcg::ParallelShape> shapes;
  for (int b : program.input_buffers)
    shapes.push_back(pcg::ParallelShape::unpartitioned(program.buffers[static_cast<std::size_t>(b)].dims));
  for (std::size_t j = 0; j < shapes.size(); ++j) {
    shapes[j].R = degree;
    for (std::size_t d = 0; d < shapes[j].rank(); ++d)
      if (split.count({program.input_buffers[j], d})) {
        shapes[j].D[d] = degree;
        shapes[j].R = 1;
      }
  }
  return shapes;
}

ParallelSummary summarize_parallelism(const Program& program) {
  ParallelSummary summary;
  for (std::size_t i = 0; i < program.input_buffers.size(); ++i) {
    const auto& buf = program.buffers[static_cast<std::size_t>(program.input_buffers[i])];
    for (std::size_t k = 0; k < buf.dims.size(); ++k) {
      DimensionRole role{buf.name, k, "", DimensionRole::Fixed};
      try {
        auto outs = derive_output_degrees(program, split_inputs(program, i, k, 2));
        bool partitioned = false;
        for (const auto& o : outs)
          for (auto d : o.D) partitioned |= d > 1;
        role.kind = partitioned ? DimensionRole::Free : (outs[0].V > 1 ? DimensionRole::Summed : DimensionRole::Fixed);
      } catch (const LoomError&) {
        role.kind = DimensionRole::Fixed;
      }
      summary.roles.push_back(role);
    }
    std::vector<pcg::ParallelShape> trial;
    for (int b : program.input_buffers)
      trial.push_back(pcg::ParallelShape::unpartitioned(program.buffers[static_cast<std::size_t>(b)].dims));
    for (auto& t : trial) t.R = 2;
    trial[i].R = 1;
    trial[i].V = 2;
    try {
      auto outs = derive_output_degrees(program, trial);
      if (outs[0].V > 1) summary.linear_inputs.push_back(buf.name);
    } catch (const LoomError&) {
    }
  }
  return summary;
}

namespace {

void name_read_indices(const Expr& e, const OpDecl& op, std::vector<std::vector<std::string>>& names) {
  if (e.kind == ExprKind::Read) {
    const auto input = std::find_if(op.inputs.begin(), op.inputs.end(), [&](const InputParam& p) { return p.name == e.name; });
    if (input != op.inputs.end()) {
      std::vector<std::string>& dims = names[static_cast<std::size_t>(input - op.inputs.begin())];
      const std::size_t packed = dims.size() + 1 > e.indices.size() ? dims.size() + 1 - e.indices.size() : 0;
      std::size_t d = 0;
      for (const IndexArg& a : e.indices) {
        if (a.is_pack()) {
          for (std::size_t k = 0; k < packed && d < dims.size(); ++k, ++d)
            if (dims[d].empty()) dims[d] = a.pack_name + std::to_string(k);
        } else if (d < dims.size()) {
          if (dims[d].empty() && a.expr->kind == ExprKind::Name) dims[d] = a.expr->name;
          ++d;
        }
      }
    }
  }
  for (const ExprPtr& a : e.args)
    if (a) name_read_indices(*a, op, names);
  for (const IndexArg& a : e.indices)
    if (a.expr) name_read_indices(*a.expr, op, names);
  if (e.fallback) name_read_indices(*e.fallback, op, names);
}

}  // namespace

std::vector<std::vector<std::string>> input_index_names(const OpDecl& op, const std::vector<std::vector<std::int64_t>>& input_dims) {
  std::vector<std::vector<std::string>> names;
  for (const auto& dims : input_dims) names.emplace_back(dims.size());
  names.resize(op.inputs.size());
  for (const OpStmt& st : op.stmts)
    if (st.expr) name_read_indices(*st.expr, op, names);
  return names;
}

pcg::ParallelShape apply_parallel_form(const ParallelDecl& form, const pcg::AttrMap& attrs, const pcg::ParallelShape& input) {
  pcg::ParallelShape shape = input;
  IntScope scope;
  for (const auto& a : form.attrs) {
    auto it = attrs.find(a.name);
    if (it == attrs.end()) throw LoomError({{a.loc, form.name + ": attribute '" + a.name + "' is not given"}});
    if (a.domain && std::find(a.domain->begin(), a.domain->end(), it->second) == a.domain->end())
      throw LoomError({{a.loc, form.name + ": attribute " + a.name + " = " + std::to_string(it->second) + " is outside its domain"}});
    scope.values[a.name] = it->second;
  }
  for (const auto& st : form.stmts) {
    scope.input = &shape;
    if (st.require) {
      if (eval_int(*st.require, scope) == 0)
        throw LoomError(
            {{st.require->loc, form.name + ": requirement '" + expr_to_string(*st.require) + "' does not hold for " + shape.to_string()}});
      continue;
    }
    const auto& up = *st.update;
    std::int64_t amount = eval_int(*up.amount, scope);
    if (amount <= 0) throw LoomError({{up.loc, form.name + ": degree change by " + std::to_string(amount)}});
    std::int64_t* target = nullptr;
    if (up.degree == DegreeKind::V) target = &shape.V;
    if (up.degree == DegreeKind::R) target = &shape.R;
    if (up.degree == DegreeKind::D || up.degree == DegreeKind::P) {
      std::int64_t dim = eval_int(*up.dim, scope);
      if (dim < 0 || static_cast<std::size_t>(dim) >= shape.rank())
        throw LoomError({{up.loc, form.name + ": dimension " + std::to_string(dim) + " does not exist in " + shape.to_string()}});
      target = &(up.degree == DegreeKind::D ? shape.D : shape.P)[static_cast<std::size_t>(dim)];
    }
    if (up.multiply) {
      *target *= amount;
    } else {
      if (*target % amount != 0)
        throw LoomError({{up.loc, form.name + ": cannot divide a degree of " + std::to_string(*target) + " by " + std::to_string(amount) +
                                      " in " + input.to_string()}});
      *target /= amount;
    }
  }
  return shape;
}

}  // namespace loom::spec
