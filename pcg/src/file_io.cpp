#include "loom/pcg/file_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <system_error>

#include "loom/pcg/diagnostic.hpp"

namespace loom::pcg {

namespace {

// Writes all of `text` to `fd`; false on an error (errno says which).
bool write_all(int fd, const std::string& text) {
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<std::size_t>(n);
  }
  return true;
}

std::string directory_of(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  // The contents go first to a file with no name, so a process killed while writing leaves
  // nothing behind; it is named only once complete, then renamed over `path`.
  const int fd = ::open(directory_of(path).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  if (fd >= 0) {
    const bool ok = write_all(fd, text);
    const int write_errno = errno;
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    const bool linked = ok && ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, temporary.c_str(), AT_SYMLINK_FOLLOW) == 0;
    ::close(fd);
    if (!ok) throw LoomError(path + ": writing failed: " + std::strerror(write_errno));
    if (!linked) throw LoomError(path + ": cannot write: " + std::strerror(errno));
  } else {
    // A file system without unnamed files: a named temporary, removed if the write fails.
    std::ofstream out(temporary, std::ios::binary);
    if (!out) throw LoomError(path + ": cannot write (cannot create " + temporary + ")");
    out << text;
    out.flush();
    if (!out) {
      out.close();
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      throw LoomError(path + ": writing failed (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw LoomError(path + ": cannot replace the file: " + ec.message());
  }
}

}  // namespace loom::pcg
