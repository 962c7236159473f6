// What loading the rule libraries costs `loom optimize` before it searches: per library, reading the
// file, parsing its JSON, building the rules against the specs, freeing the JSON, and checking each
// rule's proof record against its content; then select_rules over all of them as the command calls
// it, and the process's peak memory.
// Usage: loom_rule_loading_bench [LIBRARY.json ...] (default: the bundled libraries)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_support.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/verifier/proof_record.hpp"
#include "loom/verifier/rule_selection.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point from) { return std::chrono::duration<double>(Clock::now() - from).count(); }

}  // namespace

int main(int argc, char** argv) {
  using namespace loom;
  Clock::time_point began = Clock::now();
  const spec::Library& library = bench::library();
  std::printf("specs loaded in %.3f s\n", seconds_since(began));
  std::vector<std::string> files = verifier::bundled_rule_libraries();
  if (argc > 1) files.assign(argv + 1, argv + argc);
  std::printf("%-28s %7s %7s %7s %7s %7s %7s %8s\n", "library", "read", "parse", "build", "free", "check", "total", "rules");
  for (const std::string& file : files) {
    double stage[5];
    Clock::time_point at = Clock::now();
    std::ifstream in(file, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    stage[0] = seconds_since(at);
    at = Clock::now();
    nlohmann::json parsed = nlohmann::json::parse(text);
    stage[1] = seconds_since(at);
    at = Clock::now();
    const pcg::RuleLibrary rules = pcg::rule_library_from_json(parsed, library);
    stage[2] = seconds_since(at);
    at = Clock::now();
    parsed = nlohmann::json();
    stage[3] = seconds_since(at);
    at = Clock::now();
    const verifier::ProofChecker checker(library);
    std::size_t proved = 0;
    for (const pcg::Rule& r : rules.rules) {
      const auto standing = checker.standing(r, checker.content_hash(r));
      proved += standing && standing->status == pcg::VerificationStatus::Proved;
    }
    stage[4] = seconds_since(at);
    const double total = stage[0] + stage[1] + stage[2] + stage[3] + stage[4];
    const std::string name = file.substr(file.find_last_of('/') + 1);
    std::printf("%-28s", name.c_str());
    for (double s : stage) std::printf(" %6.3fs", s);
    std::printf(" %6.3fs %8zu (%zu proved)\n", total, rules.rules.size(), proved);
  }
  began = Clock::now();
  const verifier::RuleSelection selection = verifier::select_rules(library, {}, files, false);
  std::printf("select_rules over all: %.3f s, %zu rules usable\n", seconds_since(began), selection.rules.size());
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("peak memory: %.1f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
  return 0;
}
