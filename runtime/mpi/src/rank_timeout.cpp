#include "loom/runtime/rank_timeout.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {

Seconds rank_timeout(const char* environment_value, Seconds fallback) {
  if (environment_value == nullptr) return fallback;
  const std::string text = environment_value;
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(text.c_str(), &end);
  const bool whole_text_read = !text.empty() && end == text.c_str() + text.size();
  if (!whole_text_read || errno != 0 || !std::isfinite(seconds) || seconds <= 0.0)
    throw LoomError(std::string(rank_timeout_variable) + "='" + text + "': expected a positive number of seconds");
  return Seconds(seconds);
}

}  // namespace loom::runtime
