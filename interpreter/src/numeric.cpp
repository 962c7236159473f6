#include "loom/interpreter/numeric.hpp"

#include <cmath>
#include <map>

namespace loom::spec {

double RealDomain::apply(Function f, double a, double b) {
  switch (f) {
    case Function::Exp: return std::exp(a);
    case Function::Log: return std::log(a);
    case Function::Tanh: return std::tanh(a);
    case Function::Sigmoid: return 1.0 / (1.0 + std::exp(-a));
    case Function::Sqrt: return std::sqrt(a);
    case Function::Abs: return std::fabs(a);
    case Function::Erf: return std::erf(a);
    case Function::Pow: return std::pow(a, b);
    case Function::Max: return a < b ? b : a;
    case Function::Min: return b < a ? b : a;
  }
  return a;
}

namespace {
using M = ModularDomain;
__extension__ typedef unsigned __int128 uint128;

std::uint64_t reduce(uint128 x) {
  std::uint64_t lo = static_cast<std::uint64_t>(x & M::p);
  std::uint64_t hi = static_cast<std::uint64_t>(x >> 61);
  std::uint64_t r = lo + hi;
  while (r >= M::p) r -= M::p;
  return r;
}

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

M::Value pseudo_random(Function f, M::Value a, M::Value b) {
  std::uint64_t h = mix(a.v ^ (static_cast<std::uint64_t>(f) + 1) * 0x9e3779b97f4a7c15ULL);
  h = mix(h ^ b.v);
  return {h % M::p};
}
}  // namespace

M::Value ModularDomain::from_int(std::int64_t v) {
  std::int64_t r = v % static_cast<std::int64_t>(p);
  if (r < 0) r += static_cast<std::int64_t>(p);
  return {static_cast<std::uint64_t>(r)};
}

M::Value ModularDomain::from_real(double v) {
  if (std::isinf(v)) return v > 0 ? highest() : lowest();
  if (v == std::floor(v) && std::fabs(v) < 9e15) return from_int(static_cast<std::int64_t>(v));
  auto scaled = static_cast<std::int64_t>(std::llround(v * 1e6));
  return div(from_int(scaled), from_int(1000000));
}

std::int64_t ModularDomain::signed_value(Value a) {
  return a.v > p / 2 ? static_cast<std::int64_t>(a.v) - static_cast<std::int64_t>(p) : static_cast<std::int64_t>(a.v);
}

M::Value ModularDomain::add(Value a, Value b) {
  std::uint64_t r = a.v + b.v;
  return {r >= p ? r - p : r};
}
M::Value ModularDomain::sub(Value a, Value b) { return {a.v >= b.v ? a.v - b.v : a.v + p - b.v}; }
M::Value ModularDomain::mul(Value a, Value b) { return {reduce(static_cast<uint128>(a.v) * b.v)}; }
M::Value ModularDomain::neg(Value a) { return {a.v == 0 ? 0 : p - a.v}; }

M::Value ModularDomain::inverse(Value a) {
  if (a.v == 0) return {0};
  Value result{1}, base = a;
  for (std::uint64_t e = p - 2; e; e >>= 1) {
    if (e & 1) result = mul(result, base);
    base = mul(base, base);
  }
  return result;
}

M::Value ModularDomain::div(Value a, Value b) { return mul(a, inverse(b)); }

M::Value ModularDomain::apply(Function f, Value a, Value b) {
  switch (f) {
    case Function::Max: return less(a, b) ? b : a;
    case Function::Min: return less(b, a) ? b : a;
    case Function::Abs: return signed_value(a) < 0 ? neg(a) : a;
    case Function::Pow: {
      std::int64_t e = signed_value(b);
      if (e >= 0 && e <= 64) {
        Value r{1};
        for (std::int64_t i = 0; i < e; ++i) r = mul(r, a);
        return r;
      }
      return pseudo_random(f, a, b);
    }
    default: return pseudo_random(f, a, b);
  }
}

std::string function_name(Function f) {
  switch (f) {
    case Function::Exp: return "exp";
    case Function::Log: return "log";
    case Function::Tanh: return "tanh";
    case Function::Sigmoid: return "sigmoid";
    case Function::Sqrt: return "sqrt";
    case Function::Abs: return "abs";
    case Function::Erf: return "erf";
    case Function::Pow: return "pow";
    case Function::Max: return "max";
    case Function::Min: return "min";
  }
  return "?";
}

bool function_from_name(const std::string& name, Function& f, int& arity) {
  static const std::map<std::string, std::pair<Function, int>> table = {
      {"exp", {Function::Exp, 1}},   {"log", {Function::Log, 1}}, {"tanh", {Function::Tanh, 1}}, {"sigmoid", {Function::Sigmoid, 1}},
      {"sqrt", {Function::Sqrt, 1}}, {"abs", {Function::Abs, 1}}, {"erf", {Function::Erf, 1}},   {"pow", {Function::Pow, 2}},
      {"max", {Function::Max, 2}},   {"min", {Function::Min, 2}}};
  auto it = table.find(name);
  if (it == table.end()) return false;
  f = it->second.first;
  arity = it->second.second;
  return true;
}

}  // namespace loom::spec
