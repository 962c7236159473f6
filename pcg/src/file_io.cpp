#include "loom/pcg/file_io.hpp"

#include <filesystem>
#include <fstream>
#include <system_error>

#include "loom/pcg/diagnostic.hpp"

namespace loom::pcg {

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary);
    if (!out) throw LoomError(path + ": cannot write (cannot create " + temporary + ")");
    out << text;
    out.flush();
    if (!out) throw LoomError(path + ": writing failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw LoomError(path + ": cannot replace the file: " + ec.message());
}

}  // namespace loom::pcg
