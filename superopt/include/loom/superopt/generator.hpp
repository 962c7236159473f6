#pragma once
// The substitution generator end to end: enumerate, fingerprint, prune, render, check
// numerically, and collect the surviving rules into a rule library with a summary.
#include <string>

#include <nlohmann/json.hpp>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/superopt/options.hpp"
#include "loom/superopt/progress.hpp"

namespace loom::superopt {

// The Unity paper's operator set, by the bundled library's names.
std::vector<std::string> unity_ops();
std::vector<std::string> unity_parallel_forms();

struct GenerateResult {
  pcg::RuleLibrary rules;  // summary included
  nlohmann::json summary;  // graphs, candidates, pruning, numeric_check, rules, by_category, seconds, ...
};

// Throws LoomError for options that name unknown forms or are out of range.
GenerateResult generate(const spec::Library& library, const GeneratorOptions& options, const ProgressFn& progress = {});

// The rule library as a .loom file whose imports are relative to `directory`.
std::string rules_spec_text(const spec::Library& library, const GenerateResult& result, const std::string& directory);

// Peak resident memory of this process so far, in MiB.
double peak_memory_mib();

}  // namespace loom::superopt
