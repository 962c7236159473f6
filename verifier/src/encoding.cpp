#include "loom/verifier/encoding.hpp"

#include <algorithm>

#include "loom/interpreter/int_eval.hpp"

namespace loom::verifier {
namespace {

[[noreturn]] void fail(const SourceLocation& where, const std::string& message) { throw LoomError({{where, message}}); }

z3::expr as_int(const z3::expr& e) { return e.is_bool() ? z3::ite(e, e.ctx().int_val(1), e.ctx().int_val(0)) : e; }
z3::expr as_bool(const z3::expr& e) { return e.is_bool() ? e : e != 0; }

z3::expr encode_any(z3::context& c, const spec::Expr& e, const EncodingScope& scope) {
  using spec::ExprKind;
  switch (e.kind) {
    case ExprKind::Number:
      if (!e.integral) fail(e.loc, "a real number cannot be encoded as an integer: " + spec::expr_to_string(e));
      return c.int_val(static_cast<int64_t>(e.number));
    case ExprKind::Name: {
      auto it = scope.ints.find(e.name);
      if (it == scope.ints.end()) fail(e.loc, "'" + e.name + "' has no integer value Z3 can see");
      return it->second;
    }
    case ExprKind::Unary: {
      z3::expr a = encode_any(c, *e.args[0], scope);
      return e.name == "-" ? -as_int(a) : !as_bool(a);
    }
    case ExprKind::Ternary:
      return z3::ite(as_bool(encode_any(c, *e.args[0], scope)), as_int(encode_any(c, *e.args[1], scope)),
                     as_int(encode_any(c, *e.args[2], scope)));
    case ExprKind::Call: {
      std::vector<z3::expr> a;
      for (const auto& arg : e.args) a.push_back(as_int(encode_any(c, *arg, scope)));
      if (e.name == "min" && a.size() == 2) return z3::ite(a[0] <= a[1], a[0], a[1]);
      if (e.name == "max" && a.size() == 2) return z3::ite(a[0] >= a[1], a[0], a[1]);
      if (e.name == "abs" && a.size() == 1) return z3::ite(a[0] >= 0, a[0], -a[0]);
      fail(e.loc, "'" + e.name + "(...)' cannot be encoded for Z3");
    }
    case ExprKind::Binary: {
      z3::expr a = encode_any(c, *e.args[0], scope), b = encode_any(c, *e.args[1], scope);
      if (e.binary == spec::BinaryOp::And) return as_bool(a) && as_bool(b);
      if (e.binary == spec::BinaryOp::Or) return as_bool(a) || as_bool(b);
      a = as_int(a);
      b = as_int(b);
      switch (e.binary) {
        case spec::BinaryOp::Add: return a + b;
        case spec::BinaryOp::Sub: return a - b;
        case spec::BinaryOp::Mul: return a * b;
        case spec::BinaryOp::Div: return a / b;
        case spec::BinaryOp::Mod: return z3::mod(a, b);
        case spec::BinaryOp::Lt: return a < b;
        case spec::BinaryOp::Le: return a <= b;
        case spec::BinaryOp::Gt: return a > b;
        case spec::BinaryOp::Ge: return a >= b;
        case spec::BinaryOp::Eq: return a == b;
        case spec::BinaryOp::Ne: return a != b;
        case spec::BinaryOp::And:
        case spec::BinaryOp::Or: break;
      }
      fail(e.loc, "operator '" + e.name + "' cannot be encoded for Z3");
    }
    default: fail(e.loc, "'" + spec::expr_to_string(e) + "' cannot be encoded for Z3");
  }
}

}  // namespace

Vocabulary::Vocabulary(z3::context& context, const spec::Library& library)
    : context_(context),
      library_(library),
      tensor_(context.uninterpreted_sort("Tensor")),
      dim_(context.function("dim", tensor_, context.int_sort(), context.int_sort())),
      rdim_(context.function("rdim", tensor_, context.int_sort(), context.int_sort())) {}

z3::func_decl Vocabulary::form(const std::string& name, std::size_t output) {
  auto key = std::make_pair(name, output);
  if (auto it = forms_.find(key); it != forms_.end()) return it->second;
  const auto* params = library_.attr_params(name);
  if (!params || library_.find_fused(name)) throw LoomError("'" + name + "' is not an op or parallel form");
  z3::sort_vector domain(context_);
  for (std::size_t i = 0; i < params->size(); ++i) domain.push_back(context_.int_sort());
  for (std::size_t i = 0; i < library_.input_count(name); ++i) domain.push_back(tensor_);
  const std::string symbol = library_.output_count(name) == 1 ? name : name + "." + std::to_string(output);
  z3::func_decl f = context_.function(symbol.c_str(), domain, tensor_);
  forms_.emplace(key, f);
  return f;
}

z3::expr Vocabulary::literal(const std::string& name) { return context_.constant(("literal " + name).c_str(), tensor_); }

z3::expr Vocabulary::dim(const z3::expr& tensor, int index) { return dim_(tensor, context_.int_val(index)); }
z3::expr Vocabulary::rdim(const z3::expr& tensor, int index) { return rdim_(tensor, context_.int_val(index)); }

std::vector<z3::expr> TermEncoder::encode(const spec::Term& term, const EncodingScope& scope) {
  switch (term.kind) {
    case spec::TermKind::Var: {
      auto it = scope.tensors.find(term.name);
      if (it == scope.tensors.end()) fail(term.loc, "unbound variable '" + term.name + "'");
      return {it->second};
    }
    case spec::TermKind::Project: {
      auto outputs = encode(*term.args[0], scope);
      const std::size_t pick = vocab_.library().projected_output(term.args[0]->name, term).value_or(outputs.size());
      if (pick >= outputs.size()) fail(term.loc, "no output '" + (term.position >= 0 ? std::to_string(term.position) : term.field) + "'");
      return {outputs[pick]};
    }
    case spec::TermKind::Apply: return apply(term, scope);
    case spec::TermKind::Literal: return {vocab_.literal(spec::literal_name(term.value))};
    case spec::TermKind::Tuple: {
      std::vector<z3::expr> out;
      for (const auto& part : term.args)
        for (const auto& value : encode(*part, scope)) out.push_back(value);
      return out;
    }
  }
  return {};
}

z3::expr TermEncoder::encode_single(const spec::Term& term, const EncodingScope& scope) {
  auto outputs = encode(term, scope);
  if (outputs.size() != 1) fail(term.loc, "'" + term.name + "' has " + std::to_string(outputs.size()) + " outputs; pick one");
  return outputs[0];
}

std::vector<z3::expr> TermEncoder::apply(const spec::Term& term, const EncodingScope& scope) {
  z3::context& c = vocab_.context();
  const spec::Library& lib = vocab_.library();
  const auto* params = lib.attr_params(term.name);
  if (!params) fail(term.loc, "unknown operator or parallel form '" + term.name + "'");
  std::vector<std::optional<z3::expr>> attrs(params->size());
  for (std::size_t i = 0; i < term.attrs.size(); ++i) {
    const spec::AttrArg& arg = term.attrs[i];
    std::size_t slot = i;
    if (!arg.name.empty()) {
      auto it = std::find_if(params->begin(), params->end(), [&](const spec::AttrParam& p) { return p.name == arg.name; });
      if (it == params->end()) fail(arg.loc, term.name + " has no attribute '" + arg.name + "'");
      slot = static_cast<std::size_t>(it - params->begin());
    }
    if (slot >= params->size()) fail(arg.loc, term.name + " takes " + std::to_string(params->size()) + " attributes");
    const spec::AttrParam& param = (*params)[slot];
    const spec::Expr& v = *arg.value;
    z3::expr value = (v.kind == spec::ExprKind::Name && param.labels.count(v.name) && !scope.ints.count(v.name))
                         ? c.int_val(param.labels.at(v.name))
                         : as_int(encode_any(c, v, scope)).simplify();
    attrs[slot] = hook_ ? hook_(value) : value;
  }
  for (std::size_t i = 0; i < attrs.size(); ++i)
    if (!attrs[i]) fail(term.loc, term.name + ": attribute '" + (*params)[i].name + "' is not given");
  std::vector<z3::expr> args;
  for (const auto& a : term.args) args.push_back(encode_single(*a, scope));
  if (args.size() != lib.input_count(term.name))
    fail(term.loc, term.name + " takes " + std::to_string(lib.input_count(term.name)) + " inputs, given " + std::to_string(args.size()));

  if (const auto* fused = lib.find_fused(term.name)) {
    EncodingScope inner;
    for (std::size_t i = 0; i < params->size(); ++i) inner.ints.emplace((*params)[i].name, *attrs[i]);
    for (std::size_t i = 0; i < fused->inputs.size(); ++i) inner.tensors.emplace(fused->inputs[i].name, args[i]);
    return encode(*fused->body, inner);
  }
  z3::expr_vector operands(c);
  for (const auto& a : attrs) operands.push_back(*a);
  for (const auto& a : args) operands.push_back(a);
  std::vector<z3::expr> outputs;
  for (std::size_t k = 0; k < lib.output_count(term.name); ++k) outputs.push_back(vocab_.form(term.name, k)(operands));
  return outputs;
}

z3::expr encode_int(z3::context& context, const spec::Expr& expr, const EncodingScope& scope) {
  return as_int(encode_any(context, expr, scope));
}

z3::expr encode_condition(z3::context& context, const spec::Expr& expr, const EncodingScope& scope) {
  return as_bool(encode_any(context, expr, scope));
}

void bind_dimension_symbols(Vocabulary& vocabulary, const spec::Quantifier& quantifier, EncodingScope& scope) {
  for (const auto& b : quantifier.binders) {
    if (b.is_int || !b.shape) continue;
    auto tensor = scope.tensors.find(b.name);
    if (tensor == scope.tensors.end()) continue;
    const auto& dims = b.shape->dims;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      if (dims[i].is_pack() || dims[i].expr->kind != spec::ExprKind::Name || scope.ints.count(dims[i].expr->name)) continue;
      const bool pack_before =
          std::any_of(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(i), [](const auto& d) { return d.is_pack(); });
      const bool pack_after =
          std::any_of(dims.begin() + static_cast<std::ptrdiff_t>(i) + 1, dims.end(), [](const auto& d) { return d.is_pack(); });
      if (!pack_before)
        scope.ints.emplace(dims[i].expr->name, vocabulary.dim(tensor->second, static_cast<int>(i)));
      else if (!pack_after)
        scope.ints.emplace(dims[i].expr->name, vocabulary.rdim(tensor->second, static_cast<int>(dims.size() - 1 - i)));
    }
  }
}

z3::expr binder_domain(z3::context& context, const spec::Binder& binder, const z3::expr& value) {
  if (binder.domain) {
    z3::expr any = context.bool_val(false);
    for (auto v : *binder.domain) any = any || value == context.int_val(static_cast<int64_t>(v));
    return any.simplify();
  }
  const z3::expr bound = context.int_val(static_cast<int64_t>(binder.bound));
  if (binder.bound_op == ">") return value > bound;
  if (binder.bound_op == ">=") return value >= bound;
  if (binder.bound_op == "<") return value < bound;
  if (binder.bound_op == "<=") return value <= bound;
  if (binder.bound_op == "!=") return value != bound;
  return context.bool_val(true);
}

}  // namespace loom::verifier
