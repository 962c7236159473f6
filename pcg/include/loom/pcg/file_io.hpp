#pragma once
#include <string>

namespace loom::pcg {

// Writes `text` to an unnamed file beside `path`, names it once complete and renames it over
// `path`: an interrupted write, even a killed process, leaves the old file as it was and no
// temporary behind (where the file system has no unnamed files, a named temporary is used and
// removed on failure). Throws LoomError naming the file.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace loom::pcg
