#include "loom/pcg/user_cache.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace loom::pcg {

std::string user_cache_dir() {
  namespace fs = std::filesystem;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return (fs::path(xdg) / "loom").string();
  if (const char* home = std::getenv("HOME"); home && *home) return (fs::path(home) / ".cache" / "loom").string();
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  // Named for the user, so that no one else's files are taken for ours.
  return (tmp / ("loom-" + std::to_string(::getuid()))).string();
}

}  // namespace loom::pcg
