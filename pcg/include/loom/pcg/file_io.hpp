#pragma once
#include <string>

namespace loom::pcg {

// Writes `text` to a temporary file beside `path`, then renames it over `path`: an interrupted
// write leaves the old file as it was. Throws LoomError naming the file.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace loom::pcg
