#include "loom/superopt/numeric_check.hpp"

#include <algorithm>
#include <map>

#include "loom/interpreter/axiom_check.hpp"
#include "loom/interpreter/parser.hpp"
#include "loom/superopt/hash.hpp"
#include "parallel.hpp"

namespace loom::superopt {

namespace {
constexpr const char* kExampleSuffix = "_at_example_sizes";
constexpr std::size_t kChunk = 200;
}  // namespace

std::vector<NumericCheck> check_numerically(const spec::Library& library, const std::vector<RenderedRule>& rules,
                                            const GeneratorOptions& options, const ProgressFn& progress) {
  std::vector<NumericCheck> results(rules.size());
  if (rules.empty()) return results;

  spec::AxiomCheckOptions at_example;
  at_example.instances = options.check_instances;
  at_example.seed = hash_combine(options.seed, 0xC4EC7ULL);
  spec::AxiomCheckOptions at_random = at_example;
  at_random.max_dim = options.check_max_dim;
  at_random.max_tries = 4000;

  // Rules are parsed and checked in chunks, which keeps the parsed text small. They are evaluated
  // against `library` as they are: loading them as a library of their own would parse every
  // imported spec file again for each chunk.
  const std::size_t chunks = (rules.size() + kChunk - 1) / kChunk;
  const std::size_t jobs = static_cast<std::size_t>(std::max(1, options.jobs));
  parallel_for(chunks, jobs, "check", progress, [&](std::size_t, std::size_t chunk) {
    const std::size_t begin = chunk * kChunk, end = std::min(rules.size(), begin + kChunk);
    std::string text;
    for (std::size_t i = begin; i < end; ++i) {
      text += rule_text(rules[i].rule.id, rules[i].body) + "\n";
      text += rule_text(rules[i].rule.id + kExampleSuffix, rules[i].concrete_body) + "\n";
    }
    // Candidates may be false, even ill-typed at some sizes: that is what this check finds out.
    const spec::Module checks = spec::parse_module(text, "<generated rules>");
    std::map<std::string, const spec::EquationDecl*> by_name;
    for (const auto& eq : checks.rules) by_name[eq.name] = &eq;
    for (std::size_t i = begin; i < end; ++i) {
      const std::string& id = rules[i].rule.id;
      NumericCheck& out = results[i];
      const auto example = spec::check_axiom(library, *by_name.at(id + kExampleSuffix), at_example);
      out.instances += example.instances;
      out.at_example_sizes = example.sound;
      if (!example.sound) {
        out.problem = "at the example sizes: " + example.problem;
        continue;
      }
      const auto random = spec::check_axiom(library, *by_name.at(id), at_random);
      out.instances += random.instances;
      out.at_random_sizes = random.sound;
      if (!random.sound) out.problem = "at random sizes: " + random.problem;
    }
  });
  return results;
}

}  // namespace loom::superopt
