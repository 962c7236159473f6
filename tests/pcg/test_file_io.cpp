// Files are replaced whole: the old file stays until the new one is complete, and no temporary is
// left beside it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/file_io.hpp"

namespace loom::pcg {
namespace {

namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path scratch() {
  const fs::path dir = fs::temp_directory_path() / ("loom_file_io_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(FileIo, ReplacesTheFileAndLeavesNothingElse) {
  const fs::path dir = scratch();
  const fs::path file = dir / "rules.json";
  write_file_atomically(file.string(), "first\n");
  write_file_atomically(file.string(), "second\n");
  EXPECT_EQ(read(file), "second\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
  EXPECT_EQ(entries, 1u) << "a temporary was left beside the file";
  fs::remove_all(dir);
}

TEST(FileIo, AMissingDirectoryIsAnErrorNamingTheFile) {
  const fs::path file = fs::temp_directory_path() / "loom_no_such_directory" / "out.json";
  try {
    write_file_atomically(file.string(), "x");
    FAIL() << "wrote into a missing directory";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string()), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::pcg
