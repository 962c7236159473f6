#include "output_paths.hpp"

#include <filesystem>
#include <system_error>

#include "loom/pcg/diagnostic.hpp"

namespace loom::cli {

void require_writable_directory(const std::string& path, const char* option) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) throw LoomError(std::string(option) + ": directory '" + dir.string() + "' does not exist");
  if (std::filesystem::is_directory(path, ec)) throw LoomError(std::string(option) + ": '" + path + "' is a directory, not a file");
}

}  // namespace loom::cli
