#include "loom/interpreter/int_eval.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace loom::spec {
namespace {

[[noreturn]] void fail(const Expr& e, const std::string& message) { throw LoomError({{e.loc, message}}); }

constexpr std::int64_t kMinInt = std::numeric_limits<std::int64_t>::min();

std::int64_t floor_div(const Expr& e, std::int64_t a, std::int64_t b) {
  if (b == 0) fail(e, "division by zero in '" + expr_to_string(e) + "'");
  if (a == kMinInt && b == -1) fail(e, expr_to_string(e) + " overflows 64-bit integers");
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::int64_t floor_mod(const Expr& e, std::int64_t a, std::int64_t b) {
  if (b == -1) return 0;  // also for kMinInt, whose quotient by -1 does not fit
  return a - floor_div(e, a, b) * b;
}

// -a, refusing the one value whose negation does not fit.
std::int64_t negated(const Expr& e, std::int64_t a) {
  if (a == kMinInt) fail(e, expr_to_string(e) + " overflows 64-bit integers");
  return -a;
}

const pcg::ParallelShape& need_input(const Expr& e, const IntScope& s) {
  if (!s.input) fail(e, "'" + e.name + "' is only meaningful inside a parallel form");
  return *s.input;
}

std::size_t dim_index(const Expr& e, const Expr& index, const IntScope& s) {
  auto& in = need_input(e, s);
  std::int64_t i = eval_int(index, s);
  if (i < 0 || static_cast<std::size_t>(i) >= in.rank())
    fail(e, "dimension " + std::to_string(i) + " is out of range for a rank-" + std::to_string(in.rank()) + " tensor");
  return static_cast<std::size_t>(i);
}

[[noreturn]] void overflow(const Expr& e, std::int64_t a, std::int64_t b) {
  fail(e, expr_to_string(e) + " overflows 64-bit integers (" + std::to_string(a) + " " + e.name + " " + std::to_string(b) + ")");
}

}  // namespace

std::int64_t eval_int(const Expr& e, const IntScope& s) {
  switch (e.kind) {
    case ExprKind::Number:
      if (!e.integral) fail(e, "expected an integer, found " + expr_to_string(e));
      // 2^63 itself is the first double past the range.
      if (!(std::abs(e.number) < 9223372036854775808.0)) fail(e, expr_to_string(e) + " does not fit 64-bit integers");
      return static_cast<std::int64_t>(e.number);
    case ExprKind::Name: {
      if (auto it = s.values.find(e.name); it != s.values.end()) return it->second;
      if (e.name == "rank" && s.input) return static_cast<std::int64_t>(s.input->rank());
      fail(e, "unknown name '" + e.name + "' in an integer expression");
    }
    case ExprKind::Read:
      if (e.name == "shape" && e.indices.size() == 1 && !e.indices[0].is_pack())
        return need_input(e, s).dims[dim_index(e, *e.indices[0].expr, s)];
      fail(e, "a tensor read is not an integer expression");
    case ExprKind::DegreeRef: {
      auto& in = need_input(e, s);
      if (e.name == "V") return in.V;
      if (e.name == "R") return in.R;
      auto i = dim_index(e, *e.args[0], s);
      return e.name == "D" ? in.D[i] : in.P[i];
    }
    case ExprKind::Call: {
      if (e.name == "rank" && e.args.size() == 1 && e.args[0]->kind == ExprKind::Name) {
        auto it = s.packs.find(e.args[0]->name);
        if (it == s.packs.end()) fail(e, "rank(" + e.args[0]->name + "): '" + e.args[0]->name + "' is not a rank pack");
        return static_cast<std::int64_t>(it->second.size());
      }
      if ((e.name == "min" || e.name == "max") && e.args.size() == 2) {
        auto a = eval_int(*e.args[0], s), b = eval_int(*e.args[1], s);
        return e.name == "min" ? std::min(a, b) : std::max(a, b);
      }
      if (e.name == "abs" && e.args.size() == 1) {
        const std::int64_t a = eval_int(*e.args[0], s);
        return a < 0 ? negated(e, a) : a;
      }
      fail(e, "'" + e.name + "' is not an integer function (integer expressions may use min, max, abs, rank)");
    }
    case ExprKind::Unary: {
      auto a = eval_int(*e.args[0], s);
      return e.name == "-" ? negated(e, a) : static_cast<std::int64_t>(a == 0);
    }
    case ExprKind::Ternary: return eval_int(*e.args[0], s) != 0 ? eval_int(*e.args[1], s) : eval_int(*e.args[2], s);
    case ExprKind::Binary: {
      if (e.binary == BinaryOp::And) return eval_int(*e.args[0], s) != 0 && eval_int(*e.args[1], s) != 0;
      if (e.binary == BinaryOp::Or) return eval_int(*e.args[0], s) != 0 || eval_int(*e.args[1], s) != 0;
      auto a = eval_int(*e.args[0], s), b = eval_int(*e.args[1], s);
      std::int64_t out = 0;
      switch (e.binary) {
        case BinaryOp::Add:
          if (__builtin_add_overflow(a, b, &out)) overflow(e, a, b);
          return out;
        case BinaryOp::Sub:
          if (__builtin_sub_overflow(a, b, &out)) overflow(e, a, b);
          return out;
        case BinaryOp::Mul:
          if (__builtin_mul_overflow(a, b, &out)) overflow(e, a, b);
          return out;
        case BinaryOp::Div: return floor_div(e, a, b);
        case BinaryOp::Mod: return floor_mod(e, a, b);
        case BinaryOp::Lt: return a < b;
        case BinaryOp::Le: return a <= b;
        case BinaryOp::Gt: return a > b;
        case BinaryOp::Ge: return a >= b;
        case BinaryOp::Eq: return a == b;
        case BinaryOp::Ne: return a != b;
        case BinaryOp::And:
        case BinaryOp::Or: break;
      }
      fail(e, "unknown operator '" + e.name + "'");
    }
    case ExprKind::Reduce: fail(e, "a reduction is not an integer expression");
  }
  fail(e, "not an integer expression");
}

bool expr_mentions(const Expr& e, const std::string& name) {
  if (e.kind == ExprKind::Name && e.name == name) return true;
  for (const auto& ix : e.indices)
    if (ix.is_pack() ? ix.pack_name == name : expr_mentions(*ix.expr, name)) return true;
  for (const auto& a : e.args)
    if (expr_mentions(*a, name)) return true;
  return e.fallback && expr_mentions(*e.fallback, name);
}

void collect_names(const Expr& e, std::vector<std::string>& names) {
  if (e.kind == ExprKind::Name && std::find(names.begin(), names.end(), e.name) == names.end()) names.push_back(e.name);
  for (const auto& ix : e.indices)
    if (!ix.is_pack()) collect_names(*ix.expr, names);
  for (const auto& a : e.args) collect_names(*a, names);
  if (e.fallback) collect_names(*e.fallback, names);
}

std::string expr_to_string(const Expr& e) {
  std::ostringstream os;
  switch (e.kind) {
    case ExprKind::Number:
      if (std::isinf(e.number))
        os << (e.number > 0 ? "inf" : "-inf");
      else if (e.integral)
        os << static_cast<std::int64_t>(e.number);
      else
        os << e.number;
      break;
    case ExprKind::Name: os << e.name; break;
    case ExprKind::Read: {
      os << e.name << "[";
      for (std::size_t i = 0; i < e.indices.size(); ++i) {
        if (i) os << ", ";
        if (e.indices[i].is_pack())
          os << "*" << e.indices[i].pack_name;
        else
          os << expr_to_string(*e.indices[i].expr);
      }
      os << "]";
      if (e.fallback) os << " ?? " << expr_to_string(*e.fallback);
      break;
    }
    case ExprKind::Reduce: {
      os << e.name << "(";
      for (std::size_t i = 0; i < e.vars.size(); ++i) {
        if (i) os << ", ";
        os << e.vars[i].name;
        if (e.vars[i].bound) os << " < " << expr_to_string(*e.vars[i].bound);
      }
      os << ") " << expr_to_string(*e.args[0]);
      break;
    }
    case ExprKind::Call: {
      os << e.name << "(";
      for (std::size_t i = 0; i < e.args.size(); ++i) os << (i ? ", " : "") << expr_to_string(*e.args[i]);
      os << ")";
      break;
    }
    case ExprKind::Unary: os << e.name << expr_to_string(*e.args[0]); break;
    case ExprKind::Binary: os << "(" << expr_to_string(*e.args[0]) << " " << e.name << " " << expr_to_string(*e.args[1]) << ")"; break;
    case ExprKind::Ternary:
      os << "(" << expr_to_string(*e.args[0]) << " ? " << expr_to_string(*e.args[1]) << " : " << expr_to_string(*e.args[2]) << ")";
      break;
    case ExprKind::DegreeRef:
      os << e.name;
      if (!e.args.empty()) os << "[" << expr_to_string(*e.args[0]) << "]";
      break;
  }
  return os.str();
}

}  // namespace loom::spec
