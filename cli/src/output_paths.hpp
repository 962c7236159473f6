#pragma once
// Checks made on a command's output files before its work starts, so that a bad path ends it
// before anything is computed rather than after.
#include <string>

namespace loom::cli {

// Throws LoomError naming `option` when the folder `path` would be written into does not exist, or
// when `path` is a folder.
void require_writable_directory(const std::string& path, const char* option);

}  // namespace loom::cli
