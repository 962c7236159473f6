#pragma once
// Runs the loom command as a user would, for the tests that follow a model through several commands.
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace loom::runtime::testing {

class CliRunner {
 public:
  explicit CliRunner(std::string output_file) : output_file_(std::move(output_file)) {}

  // Runs `loom ARGS`, its output kept in output(); returns the exit status.
  int operator()(const std::string& args) {
    const std::string command = std::string(LOOM_CLI) + " " + args + " > " + output_file_ + " 2>&1";
    const int status = std::system(command.c_str());
    std::ifstream out(output_file_);
    output_.assign(std::istreambuf_iterator<char>(out), std::istreambuf_iterator<char>());
    return status;
  }
  const std::string& output() const { return output_; }

 private:
  std::string output_file_;
  std::string output_;
};

}  // namespace loom::runtime::testing
