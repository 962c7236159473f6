#pragma once
// The two number domains the interpreter evaluates in: double precision, and exact arithmetic
// modulo the prime 2^61 - 1 (what fingerprints use: equal graphs give equal values exactly).
#include <cmath>
#include <cstdint>
#include <string>

namespace loom::spec {

enum class Function { Exp, Log, Tanh, Sigmoid, Sqrt, Abs, Erf, Pow, Max, Min };

struct RealDomain {
  using Value = double;
  static constexpr const char* name = "double";
  static Value from_int(std::int64_t v) { return static_cast<double>(v); }
  static Value from_real(double v) { return v; }
  static double to_double(Value v) { return v; }
  static Value add(Value a, Value b) { return a + b; }
  static Value sub(Value a, Value b) { return a - b; }
  static Value mul(Value a, Value b) { return a * b; }
  static Value div(Value a, Value b) { return a / b; }
  static Value neg(Value a) { return -a; }
  static bool less(Value a, Value b) { return a < b; }
  static bool equal(Value a, Value b) { return a == b; }
  static bool truthy(Value a) { return a != 0; }
  static Value lowest() { return -HUGE_VAL; }
  static Value highest() { return HUGE_VAL; }
  static Value apply(Function f, Value a, Value b = 0);
};

// Integers modulo p = 2^61 - 1. Ordering compares the signed representatives in (-p/2, p/2], so
// max/relu agree with the reals on small integers. Non-polynomial functions are fixed
// pseudo-random functions of their argument: deterministic, so equal graphs still hash equal.
struct ModularValue {
  std::uint64_t v = 0;
  bool operator==(const ModularValue&) const = default;
};

struct ModularDomain {
  using Value = ModularValue;
  static constexpr std::uint64_t p = (std::uint64_t{1} << 61) - 1;
  static constexpr const char* name = "modular";
  static Value from_int(std::int64_t v);
  static Value from_real(double v);  // exact for integers and for decimals with up to 6 digits
  static double to_double(Value v) { return static_cast<double>(signed_value(v)); }
  static std::int64_t signed_value(Value v);
  static Value add(Value a, Value b);
  static Value sub(Value a, Value b);
  static Value mul(Value a, Value b);
  static Value div(Value a, Value b);  // a * b^-1; division by 0 gives 0
  static Value neg(Value a);
  static Value inverse(Value a);
  static bool less(Value a, Value b) { return signed_value(a) < signed_value(b); }
  static bool equal(Value a, Value b) { return a == b; }
  static bool truthy(Value a) { return a.v != 0; }
  static Value lowest() { return from_int(-static_cast<std::int64_t>(p / 2)); }
  static Value highest() { return from_int(static_cast<std::int64_t>(p / 2)); }
  static Value apply(Function f, Value a, Value b = {});
};

std::string function_name(Function f);
bool function_from_name(const std::string& name, Function& f, int& arity);

}  // namespace loom::spec
