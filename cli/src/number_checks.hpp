#pragma once
// Checks of numeric options whose messages state the bound plainly (CLI11's PositiveNumber names
// the largest double in its message).
#include <string>

#include <CLI/CLI.hpp>

namespace loom::cli {

namespace detail {
inline CLI::Validator number_at_least(double bound, bool inclusive, const char* name, const char* need) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        try {
          std::size_t used = 0;
          value = std::stod(text, &used);
          if (used != text.size()) return "expected a number, got '" + text + "'";
        } catch (const std::exception&) {
          return "expected a number, got '" + text + "'";
        }
        return (inclusive ? value >= bound : value > bound) ? std::string() : std::string(need) + ", got " + text;
      },
      name);
}
}  // namespace detail

inline CLI::Validator positive_number() { return detail::number_at_least(0, false, "POSITIVE", "must be positive"); }
inline CLI::Validator non_negative_number() { return detail::number_at_least(0, true, "NONNEGATIVE", "must be 0 or more"); }

}  // namespace loom::cli
