#include "shape_facts.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

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
    if (!op) return;
    try {
      state(*op, encoder_.encode(term, scope_), ranks(term));
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

  Ranks application_ranks(const spec::Term& term) {
    const spec::OpDecl* op = vocab_.library().find_op(term.name);
    if (!op) {
      // A parallelization form keeps its input's logical shape; a fused form is left unknown.
      if (vocab_.library().find_parallel(term.name) && !term.args.empty()) return {ranks(*term.args[0]).front()};
      return {std::nullopt};
    }
    std::map<std::string, std::size_t> pack_length;
    for (std::size_t j = 0; j < op->inputs.size() && j < term.args.size(); ++j) {
      if (!op->inputs[j].shape) continue;
      const auto& dims = op->inputs[j].shape->dims;
      const auto packs = std::count_if(dims.begin(), dims.end(), [](const spec::DimSpec& d) { return d.is_pack(); });
      const Ranks arg = ranks(*term.args[j]);
      if (packs != 1 || arg.empty() || !arg.front()) continue;
      const std::size_t fixed = dims.size() - 1;
      if (*arg.front() < fixed) continue;
      for (const auto& d : dims)
        if (d.is_pack()) pack_length.emplace(d.pack_name, *arg.front() - fixed);
    }
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

  void state(const spec::OpDecl& op, const std::vector<z3::expr>& outputs, const Ranks& output_ranks) {
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
    for (std::size_t k = 0; k < op.outputs.size() && k < outputs.size(); ++k) {
      const auto& dims = op.outputs[k].shape.dims;
      const auto first_pack = std::find_if(dims.begin(), dims.end(), [](const spec::DimSpec& d) { return d.is_pack(); });
      const auto after_last_pack = std::find_if(dims.rbegin(), dims.rend(), [](const spec::DimSpec& d) { return d.is_pack(); }).base();
      for (std::size_t i = 0; i < dims.size(); ++i) {
        if (dims[i].is_pack()) continue;
        const auto at = dims.begin() + static_cast<std::ptrdiff_t>(i);
        const int rank = k < output_ranks.size() && output_ranks[k] ? static_cast<int>(*output_ranks[k]) : -1;
        try {
          const z3::expr size = encode_int(vocab_.context(), *dims[i].expr, inner);
          const int from_end = static_cast<int>(dims.size() - 1 - i);
          if (at < first_pack) {
            facts_ = facts_ && vocab_.dim(outputs[k], static_cast<int>(i)) == size;
            if (rank >= 0) facts_ = facts_ && vocab_.rdim(outputs[k], rank - 1 - static_cast<int>(i)) == size;
          }
          if (at >= after_last_pack) {
            facts_ = facts_ && vocab_.rdim(outputs[k], from_end) == size;
            if (rank >= 0) facts_ = facts_ && vocab_.dim(outputs[k], rank - 1 - from_end) == size;
          }
        } catch (const LoomError&) {
          // rank(...) and the like: nothing to state.
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
