#pragma once
// Where Loom keeps what it can compute again (proof results, built kernels): $XDG_CACHE_HOME/loom,
// else ~/.cache/loom, else a folder of this user's own under the temporary directory.
#include <string>

namespace loom::pcg {

std::string user_cache_dir();

}  // namespace loom::pcg
