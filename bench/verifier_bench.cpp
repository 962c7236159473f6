// Verification benchmark: the rule library `loom generate` emits for the Unity op set (matmul,
// relu, ewadd, ewmul, concat, split; partition, combine, replicate, reduce) at three operators,
// verified from the bundled axioms with two jobs and no cache. Prints the figures the README
// quotes. Usage: loom_verifier_bench [RULES.json] [--jobs N] [--timeout-ms MS]
// (without RULES.json the library is generated first, in this process).
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "loom/interpreter/library.hpp"
#include "loom/superopt/generator.hpp"
#include "loom/verifier/axiom_set.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/verify.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

int main(int argc, char** argv) {
  using namespace loom;
  std::string rules_file;
  int jobs = 2;
  unsigned timeout_ms = 10000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--jobs" && i + 1 < argc)
      jobs = std::atoi(argv[++i]);
    else if (arg == "--timeout-ms" && i + 1 < argc)
      timeout_ms = static_cast<unsigned>(std::atol(argv[++i]));
    else
      rules_file = arg;
  }
  try {
    const spec::Library library = spec::Library::load({spec::Library::default_specs_dir()});
    pcg::RuleLibrary rules;
    auto start = Clock::now();
    if (rules_file.empty()) {
      superopt::GeneratorOptions options;
      options.ops = superopt::unity_ops();
      options.parallel = superopt::unity_parallel_forms();
      options.max_ops = 3;
      options.jobs = jobs;
      rules = superopt::generate(library, options).rules;
      std::cout << "generation (Unity op set, 3 operators, " << jobs << " jobs): " << rules.rules.size() << " rules in " << since(start)
                << " s" << std::endl;
    } else {
      std::ifstream in(rules_file);
      rules = pcg::rule_library_from_json(nlohmann::json::parse(in), library);
      std::cout << "loaded " << rules.rules.size() << " rules from " << rules_file << " in " << since(start) << " s" << std::endl;
    }

    start = Clock::now();
    const auto axioms = verifier::prepare_axioms(library);
    std::cout << "axioms checked by the interpreter: " << axioms.axioms.size() << " in " << since(start) << " s" << std::endl;
    const auto obligations = verifier::obligations_from_rule_library(rules, library);
    verifier::VerifyOptions options;
    options.jobs = jobs;
    options.timeout_ms = timeout_ms;
    const auto report = verifier::verify(library, axioms, obligations, options);
    const auto proved = report.count(pcg::VerificationStatus::Proved);
    std::cout << "verification (" << jobs << " jobs, timeout " << timeout_ms << " ms, no cache): " << obligations.size() << " rules in "
              << report.seconds << " s (" << obligations.size() / report.seconds << " rules/s)\n"
              << "  proved  " << proved << "\n"
              << "  refuted " << report.count(pcg::VerificationStatus::Refuted) << "\n"
              << "  unknown " << report.count(pcg::VerificationStatus::Unknown) << "\n";
    for (std::size_t i = 0; i < obligations.size(); ++i) {
      const auto& v = report.verdicts[i].verification;
      if (v.status == pcg::VerificationStatus::Refuted)
        std::cout << "  refuted " << obligations[i].text << ": " << v.counterexample << "\n";
      if (v.status == pcg::VerificationStatus::Unknown) std::cout << "  unknown " << obligations[i].text << ": " << v.reason << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
