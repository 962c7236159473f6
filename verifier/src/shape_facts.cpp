#include "shape_facts.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>

namespace loom::verifier {
namespace {

using Ranks = std::vector<std::optional<std::size_t>>;  // one per output; none where unknown

class ShapeFacts {
 public:
  ShapeFacts(Vocabulary& vocabulary, const Obligation& ob, const EncodingScope& scope)
      : vocab_(vocabulary), ob_(ob), scope_(scope), encoder_(vocabulary), facts_(vocabulary.context().bool_val(true)) {}

  void visit(const spec::Term& term) {
    if (!seen_.insert(&term).second) return;
    for (const auto& arg : term.args) visit(*arg);
    if (term.kind != spec::TermKind::Apply) return;
    const spec::OpDecl* op = vocab_.library().find_op(term.name);
    const bool parallel_form = !op && vocab_.library().find_parallel(term.name) && term.args.size() == 1;
    if (!op && !parallel_form) return;
    try {
      const std::vector<z3::expr> outputs = encoder_.encode(term, scope_);
      if (parallel_form)
        state_logical_shape_kept(term, outputs);
      else
        state(*op, term, outputs);
    } catch (const LoomError&) {
      // A term the encoder refuses fails the proof elsewhere, with its own message.
    }
  }

  z3::expr facts() const { return facts_; }

 private:
  // The rank of each output of `term`, where the variables' shapes and the signatures fix it.
  Ranks ranks(const spec::Term& term) {
    if (auto it = ranks_.find(&term); it != ranks_.end()) return it->second;
    Ranks out;
    switch (term.kind) {
      case spec::TermKind::Var: out.push_back(variable_rank(term.name)); break;
      case spec::TermKind::Literal: out.push_back(0); break;
      case spec::TermKind::Project: {
        const Ranks inner = ranks(*term.args[0]);
        const std::size_t pick = vocab_.library().projected_output(term.args[0]->name, term).value_or(0);
        out.push_back(pick < inner.size() ? inner[pick] : std::nullopt);
        break;
      }
      case spec::TermKind::Tuple:
        for (const auto& part : term.args)
          for (auto r : ranks(*part)) out.push_back(r);
        break;
      case spec::TermKind::Apply: out = application_ranks(term); break;
    }
    ranks_[&term] = out;
    return out;
  }

  std::optional<std::size_t> variable_rank(const std::string& name) const {
    for (const auto& b : ob_.quantifier.binders) {
      if (b.name != name || b.is_int || !b.shape) continue;
      if (std::any_of(b.shape->dims.begin(), b.shape->dims.end(), [](const spec::DimSpec& d) { return d.is_pack(); })) return std::nullopt;
      return b.shape->dims.size();
    }
    return std::nullopt;
  }

  // The length of each rank pack of `op` applied in `term`: from the inputs' known ranks and the
  // signature's `require rank(p) == axis` at the term's constant attributes.
  std::map<std::string, std::size_t> pack_lengths(const spec::OpDecl& op, const spec::Term& term) {
    std::map<std::string, std::size_t> length;
    spec::IntScope attrs;
    for (std::size_t i = 0; i < term.attrs.size(); ++i) {
      const std::string name = !term.attrs[i].name.empty() ? term.attrs[i].name : i < op.attrs.size() ? op.attrs[i].name : "";
      try {
        if (!name.empty()) attrs.values[name] = spec::eval_int(*term.attrs[i].value, {});
      } catch (const LoomError&) {
        // A symbolic attribute fixes no length.
      }
    }
    for (const spec::OpStmt& st : op.stmts) {
      const spec::Expr* e = st.expr.get();
      if (st.kind != spec::OpStmtKind::Require || !e || e->kind != spec::ExprKind::Binary || e->binary != spec::BinaryOp::Eq) continue;
      const spec::Expr& call = *e->args.at(0);
      if (call.kind != spec::ExprKind::Call || call.name != "rank" || call.args.size() != 1 || call.args[0]->kind != spec::ExprKind::Name)
        continue;
      try {
        const std::int64_t value = spec::eval_int(*e->args.at(1), attrs);
        if (value >= 0) length.emplace(call.args[0]->name, static_cast<std::size_t>(value));
      } catch (const LoomError&) {
        // Not fixed by constant attributes.
      }
    }
    // An input of known rank with one pack of unknown length fixes it.
    for (std::size_t j = 0; j < op.inputs.size() && j < term.args.size(); ++j) {
      if (!op.inputs[j].shape) continue;
      const Ranks arg = ranks(*term.args[j]);
      if (arg.empty() || !arg.front()) continue;
      std::size_t known = 0;
      std::vector<std::string> unknown;
      for (const auto& d : op.inputs[j].shape->dims) {
        if (!d.is_pack())
          ++known;
        else if (auto it = length.find(d.pack_name); it != length.end())
          known += it->second;
        else
          unknown.push_back(d.pack_name);  // a pack written twice counts twice, and fixes nothing alone
      }
      if (unknown.size() == 1 && *arg.front() >= known) length.emplace(unknown.front(), *arg.front() - known);
    }
    return length;
  }

  Ranks application_ranks(const spec::Term& term) {
    const spec::OpDecl* op = vocab_.library().find_op(term.name);
    if (!op) {
      // A parallelization form keeps its input's logical shape; a fused form is left unknown.
      if (vocab_.library().find_parallel(term.name) && !term.args.empty()) return {ranks(*term.args[0]).front()};
      return {std::nullopt};
    }
    const std::map<std::string, std::size_t> pack_length = pack_lengths(*op, term);
    Ranks out;
    for (const auto& output : op->outputs) {
      std::size_t rank = 0;
      bool known = true;
      for (const auto& d : output.shape.dims) {
        auto length = d.is_pack() ? pack_length.find(d.pack_name) : pack_length.end();
        if (d.is_pack() && length == pack_length.end()) known = false;
        rank += !d.is_pack() ? 1 : known ? length->second : 0;
      }
      out.push_back(known ? std::optional<std::size_t>(rank) : std::nullopt);
    }
    return out;
  }

  // Where each dimension of `dims` starts, counted from the front (or, `from_end`, from the back):
  // known up to the first pack of unknown length.
  static std::vector<std::optional<int>> positions(const std::vector<spec::DimSpec>& dims, const std::map<std::string, std::size_t>& length,
                                                   bool from_end) {
    std::vector<std::optional<int>> out(dims.size());
    std::optional<int> at = 0;
    for (std::size_t n = 0; n < dims.size(); ++n) {
      const std::size_t i = from_end ? dims.size() - 1 - n : n;
      if (!dims[i].is_pack()) {
        out[i] = at;
        if (at) ++*at;
        continue;
      }
      auto it = length.find(dims[i].pack_name);
      if (at && it != length.end()) {
        out[i] = from_end ? std::optional<int>(*at + static_cast<int>(it->second) - 1) : at;
        *at += static_cast<int>(it->second);
      } else {
        at.reset();
      }
    }
    return out;
  }

  // A parallelization form changes degrees only: its output has its input's sizes.
  void state_logical_shape_kept(const spec::Term& term, const std::vector<z3::expr>& outputs) {
    const Ranks input = ranks(*term.args[0]);
    if (outputs.size() != 1 || input.empty() || !input.front()) return;
    const z3::expr& application = outputs.front();
    const z3::expr value = application.arg(application.num_args() - 1);
    for (int i = 0; i < static_cast<int>(*input.front()); ++i) {
      facts_ = facts_ && vocab_.dim(application, i) == vocab_.dim(value, i);
      facts_ = facts_ && vocab_.rdim(application, i) == vocab_.rdim(value, i);
    }
  }

  // A size symbol between rank packs (`split`'s `n` in `[*p, n, *q]`), placed by the packs' lengths
  // at this application.
  void bind_between_packs(const spec::OpDecl& op, const spec::Term& term, const z3::expr& application, unsigned attrs,
                          const std::map<std::string, std::size_t>& length, EncodingScope& inner) {
    for (std::size_t j = 0; j < op.inputs.size() && j < term.args.size(); ++j) {
      if (!op.inputs[j].shape) continue;
      const auto& dims = op.inputs[j].shape->dims;
      const auto front = positions(dims, length, false), back = positions(dims, length, true);
      const z3::expr input = application.arg(attrs + static_cast<unsigned>(j));
      for (std::size_t i = 0; i < dims.size(); ++i) {
        if (dims[i].is_pack() || dims[i].expr->kind != spec::ExprKind::Name || inner.ints.count(dims[i].expr->name)) continue;
        if (front[i])
          inner.ints.emplace(dims[i].expr->name, vocab_.dim(input, *front[i]));
        else if (back[i])
          inner.ints.emplace(dims[i].expr->name, vocab_.rdim(input, *back[i]));
      }
    }
  }

  // A rewrite builds the side it produces through the operators' signatures, which refuse sizes
  // their requirements exclude, and matches the other in a typed graph: both sides of a rule that
  // applies are well-typed, so every requirement of an application in them holds.
  void state_requirements(const spec::OpDecl& op, const EncodingScope& inner) {
    for (const spec::OpStmt& st : op.stmts) {
      if (st.kind != spec::OpStmtKind::Require || !st.expr) continue;
      try {
        facts_ = facts_ && encode_condition(vocab_.context(), *st.expr, inner);
      } catch (const LoomError&) {
        // rank(...), or a size Z3 cannot place (between packs of unknown length): nothing to state.
      }
    }
  }

  // The sizes the signature gives each output dimension it writes, and the dimensions of a rank
  // pack an output shares with an input (`ewmul(x: [*s], y: [*s]) -> [*s]`), wherever the packs'
  // lengths place them.
  void state(const spec::OpDecl& op, const spec::Term& term, const std::vector<z3::expr>& outputs) {
    if (outputs.empty()) return;
    // Each output is the form applied to the attributes, then the inputs.
    const z3::expr& application = outputs.front();
    const unsigned attrs = static_cast<unsigned>(op.attrs.size());
    if (application.num_args() != attrs + op.inputs.size()) return;
    EncodingScope inner;
    spec::Quantifier inputs;
    for (unsigned i = 0; i < attrs; ++i) inner.ints.emplace(op.attrs[i].name, application.arg(i));
    for (std::size_t j = 0; j < op.inputs.size(); ++j) {
      inner.tensors.emplace(op.inputs[j].name, application.arg(attrs + static_cast<unsigned>(j)));
      spec::Binder b;
      b.name = op.inputs[j].name;
      b.shape = op.inputs[j].shape;
      inputs.binders.push_back(std::move(b));
    }
    bind_dimension_symbols(vocab_, inputs, inner);
    const std::map<std::string, std::size_t> length = pack_lengths(op, term);
    bind_between_packs(op, term, application, attrs, length, inner);
    state_requirements(op, inner);
    const Ranks output_ranks = ranks(term);
    auto sized = [&](const z3::expr& t, std::optional<int> front, std::optional<int> back, int rank, const z3::expr& size) {
      if (!front && back && rank >= 0) front = rank - 1 - *back;
      if (!back && front && rank >= 0) back = rank - 1 - *front;
      if (front) facts_ = facts_ && vocab_.dim(t, *front) == size;
      if (back) facts_ = facts_ && vocab_.rdim(t, *back) == size;
    };
    for (std::size_t k = 0; k < op.outputs.size() && k < outputs.size(); ++k) {
      const auto& dims = op.outputs[k].shape.dims;
      const int rank = k < output_ranks.size() && output_ranks[k] ? static_cast<int>(*output_ranks[k]) : -1;
      const auto front = positions(dims, length, false), back = positions(dims, length, true);
      for (std::size_t i = 0; i < dims.size(); ++i) {
        if (!dims[i].is_pack()) {
          try {
            const z3::expr size = encode_int(vocab_.context(), *dims[i].expr, inner);
            sized(outputs[k], front[i], back[i], rank, size);
          } catch (const LoomError&) {
            // rank(...) and the like: nothing to state.
          }
          continue;
        }
        auto len = length.find(dims[i].pack_name);
        if (len == length.end()) continue;
        for (std::size_t j = 0; j < op.inputs.size() && j < term.args.size(); ++j) {
          if (!op.inputs[j].shape) continue;
          const auto& in_dims = op.inputs[j].shape->dims;
          const auto in_front = positions(in_dims, length, false);
          const auto in_back = positions(in_dims, length, true);
          const Ranks arg_ranks = ranks(*term.args[j]);
          const int in_rank = !arg_ranks.empty() && arg_ranks.front() ? static_cast<int>(*arg_ranks.front()) : -1;
          const z3::expr input = application.arg(attrs + static_cast<unsigned>(j));
          for (std::size_t d = 0; d < in_dims.size(); ++d) {
            if (!in_dims[d].is_pack() || in_dims[d].pack_name != dims[i].pack_name) continue;
            for (int e = 0; e < static_cast<int>(len->second); ++e) {
              // Element e of the pack: its place from the front and from the back, on each side.
              auto place = [e](std::optional<int> f, std::optional<int> b, int r) {
                std::optional<int> pf = f ? std::optional<int>(*f + e) : std::nullopt;
                std::optional<int> pb = b ? std::optional<int>(*b - e) : std::nullopt;
                if (!pf && pb && r >= 0) pf = r - 1 - *pb;
                if (!pb && pf && r >= 0) pb = r - 1 - *pf;
                return std::pair{pf, pb};
              };
              const auto [out_f, out_b] = place(front[i], back[i], rank);
              const auto [in_f, in_b] = place(in_front[d], in_back[d], in_rank);
              if (out_f && in_f) facts_ = facts_ && vocab_.dim(outputs[k], *out_f) == vocab_.dim(input, *in_f);
              if (out_b && in_b) facts_ = facts_ && vocab_.rdim(outputs[k], *out_b) == vocab_.rdim(input, *in_b);
            }
            break;
          }
        }
      }
    }
  }

  Vocabulary& vocab_;
  const Obligation& ob_;
  const EncodingScope& scope_;
  std::map<const spec::Term*, Ranks> ranks_;
  TermEncoder encoder_;
  z3::expr facts_;
  std::set<const spec::Term*> seen_;
};

}  // namespace

z3::expr output_shape_facts(Vocabulary& vocabulary, const Obligation& ob, const EncodingScope& scope) {
  ShapeFacts facts(vocabulary, ob, scope);
  for (const Goal& g : ob.goals) {
    facts.visit(*g.lhs);
    facts.visit(*g.rhs);
  }
  return facts.facts();
}

}  // namespace loom::verifier
