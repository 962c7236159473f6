#pragma once
// How long a process of a distributed run waits on the other ranks before it decides one of them
// died or hung.
#include <chrono>

namespace loom::runtime {

using Seconds = std::chrono::duration<double>;

inline constexpr Seconds default_rank_timeout{300.0};

// The name of the environment variable that overrides the timeout a program gives, in seconds.
inline constexpr const char* rank_timeout_variable = "LOOM_RANK_TIMEOUT";

// `fallback` when `environment_value` is null (the variable is not set), else the value it
// holds ("30", "2.5"); a value that is not a positive finite number of seconds is a LoomError
// naming the variable.
Seconds rank_timeout(const char* environment_value, Seconds fallback);

}  // namespace loom::runtime
