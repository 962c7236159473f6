#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace loom::superopt {

// Reports that `done` of `total` work items of a stage are finished; called from the thread that
// started the generator, at most a few times a second.
using ProgressFn = std::function<void(const std::string& stage, std::size_t done, std::size_t total)>;

}  // namespace loom::superopt
