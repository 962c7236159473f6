#include "loom/superopt/generator.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>

#include "loom/superopt/enumerate.hpp"
#include "loom/superopt/numeric_check.hpp"
#include "loom/superopt/op_set.hpp"
#include "loom/superopt/prune.hpp"
#include "loom/superopt/render.hpp"
#include "parallel.hpp"

namespace loom::superopt {

std::vector<std::string> unity_ops() { return {"matmul", "relu", "ewadd", "ewmul", "concat", "split"}; }
std::vector<std::string> unity_parallel_forms() { return {"partition", "combine", "replicate", "reduce"}; }

double peak_memory_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kDroppedShown = 10;  // dropped candidates of each kind listed in the summary

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

nlohmann::json settings_json(const GeneratorOptions& options, const std::vector<InputTensor>& inputs) {
  nlohmann::json in = nlohmann::json::array();
  for (const auto& i : inputs) in.push_back({{"name", i.name}, {"shape", i.shape}});
  return {{"ops", options.ops},
          {"parallel", options.parallel},
          {"max_ops", options.max_ops},
          {"degrees", options.degrees},
          {"attr_domains", options.attr_domains},
          {"inputs", in},
          {"free_attr_values", options.free_attr_values},
          {"fingerprint_bits", options.fingerprint_bits},
          {"seed", options.seed},
          {"prune_implied", options.prune_implied},
          {"two_outputs", options.two_outputs},
          {"jobs", options.jobs}};
}

void check_options(const GeneratorOptions& options) {
  if (options.max_ops < 1 || options.max_ops > 6)
    throw LoomError("--max-ops must be between 1 and 6, got " + std::to_string(options.max_ops));
  if (options.fingerprint_bits < 1 || options.fingerprint_bits > 64)
    throw LoomError("--fingerprint-bits must be between 1 and 64, got " + std::to_string(options.fingerprint_bits));
  if (options.degrees.empty()) throw LoomError("--degree: give at least one degree");
  for (auto d : options.degrees)
    if (d < 2) throw LoomError("--degree: degrees must be at least 2, got " + std::to_string(d));
  if (options.ops.empty() && options.parallel.empty()) throw LoomError("no operators to enumerate (--ops and --parallel are empty)");
}

}  // namespace

GenerateResult generate(const spec::Library& library, const GeneratorOptions& options, const ProgressFn& progress) {
  check_options(options);
  const auto start = Clock::now();
  const std::vector<InputTensor> inputs = options.inputs.empty() ? default_inputs(options.degrees.front()) : options.inputs;
  const OpSet ops = OpSet::build(library, options, inputs);

  auto t = Clock::now();
  const Enumeration enumeration = enumerate_graphs(library, ops, inputs, options, progress);
  const double enumerate_seconds = since(t);

  t = Clock::now();
  PruneStats prune;
  const std::vector<CandidatePair> pairs = prune_candidates(library, ops, inputs, enumeration, options, prune, progress);
  const double prune_seconds = since(t);

  t = Clock::now();
  const RuleRenderer renderer(library, ops, inputs, options);
  std::vector<RenderedRule> rendered(pairs.size());
  parallel_for(pairs.size(), static_cast<std::size_t>(std::max(1, options.jobs)), "render", progress, [&](std::size_t, std::size_t i) {
    rendered[i] = renderer.render(enumeration.views[pairs[i].lhs], enumeration.views[pairs[i].rhs], "candidate_" + std::to_string(i));
  });
  const double render_seconds = since(t);

  t = Clock::now();
  std::vector<NumericCheck> checks = check_numerically(library, rendered, options, progress);
  // A rule widened past what holds (two sizes it needs equal given symbols of their own) is
  // stated again with one symbol per example size.
  std::vector<std::size_t> narrowed;
  std::vector<RenderedRule> narrow;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (checks[i].passed() || !checks[i].at_example_sizes) continue;
    RenderedRule again = renderer.render(enumeration.views[pairs[i].lhs], enumeration.views[pairs[i].rhs], rendered[i].rule.id, false);
    if (again.body == rendered[i].body) continue;
    narrowed.push_back(i);
    narrow.push_back(std::move(again));
  }
  const std::vector<NumericCheck> narrow_checks = check_numerically(library, narrow, options, progress);
  for (std::size_t n = 0; n < narrowed.size(); ++n) {
    if (!narrow_checks[n].passed()) continue;
    rendered[narrowed[n]] = std::move(narrow[n]);
    checks[narrowed[n]] = narrow_checks[n];
  }
  const double check_seconds = since(t);

  // Survivors in a stable order: smaller rules first, then by text.
  std::vector<std::size_t> kept;
  std::size_t collisions = 0, example_only = 0;
  nlohmann::json dropped = nlohmann::json::array();
  for (std::size_t i = 0; i < checks.size(); ++i) {
    if (checks[i].passed()) {
      kept.push_back(i);
      continue;
    }
    std::size_t& count = checks[i].at_example_sizes ? example_only : collisions;
    if (++count <= kDroppedShown)
      dropped.push_back({{"rule", checks[i].at_example_sizes ? rendered[i].body : rendered[i].concrete_body},
                         {"reason", checks[i].at_example_sizes ? "held only at the example sizes" : "fingerprint collision"},
                         {"problem", checks[i].problem}});
  }
  auto size_of = [&](std::size_t i) { return enumeration.views[pairs[i].lhs].size() + enumeration.views[pairs[i].rhs].size(); };
  std::stable_sort(kept.begin(), kept.end(), [&](std::size_t a, std::size_t b) {
    if (size_of(a) != size_of(b)) return size_of(a) < size_of(b);
    return rendered[a].body < rendered[b].body;
  });

  GenerateResult result;
  nlohmann::json settings = settings_json(options, inputs);
  nlohmann::json per_rule_settings = {
      {"max_ops", options.max_ops}, {"degrees", options.degrees}, {"seed", options.seed}, {"fingerprint_bits", options.fingerprint_bits}};
  std::size_t by_category[3] = {0, 0, 0};
  const int width = std::max<int>(4, static_cast<int>(std::to_string(kept.size()).size()));
  for (std::size_t n = 0; n < kept.size(); ++n) {
    const std::size_t i = kept[n];
    std::string number = std::to_string(n + 1);
    pcg::Rule rule = std::move(rendered[i].rule);
    rule.id = options.id_prefix + std::string(static_cast<std::size_t>(std::max(0, width - static_cast<int>(number.size()))), '0') + number;
    rule.text = rule_text(rule.id, rendered[i].body);
    rule.provenance = {{"generator", "loom generate"},
                       {"settings", per_rule_settings},
                       {"fingerprint", hex(enumeration.fingerprints[pairs[i].lhs])},
                       {"numeric_check",
                        {{"passed", true},
                         {"instances", checks[i].instances},
                         {"example_sizes", rendered[i].concrete_body},
                         {"random_sizes_max_dim", options.check_max_dim}}}};
    ++by_category[static_cast<int>(rule.category)];
    result.rules.rules.push_back(std::move(rule));
  }
  result.rules.specs = spec_files_used(library, result.rules.rules);

  nlohmann::json pruning = nlohmann::json::array();
  std::size_t remaining = prune.candidates;
  auto step = [&](const char* name, std::size_t removed, bool enabled) {
    pruning.push_back({{"step", name}, {"enabled", enabled}, {"before", remaining}, {"removed", removed}, {"after", remaining - removed}});
    remaining -= removed;
  };
  step("unused computation", prune.removed_unused, true);
  step("input renaming", prune.removed_renaming, true);
  step("common subgraph", prune.removed_common_subgraph, true);
  step("implied by smaller rules", prune.removed_implied, options.prune_implied);

  nlohmann::json summary;
  summary["graphs"] = enumeration.graphs;
  summary["graphs_by_size"] = enumeration.graphs_by_size;
  summary["candidate_graphs"] = enumeration.views.size();
  summary["operator_instances"] = ops.size();
  summary["buckets"] = prune.buckets;
  summary["candidates"] = prune.candidates;
  summary["pruning"] = pruning;
  summary["after_pruning"] = prune.kept;
  summary["numeric_check"] = {{"checked", checks.size()},
                              {"passed", kept.size()},
                              {"fingerprint_collisions", collisions},
                              {"example_sizes_only", example_only},
                              {"dropped_examples", dropped}};
  summary["rules"] = kept.size();
  summary["by_category"] = {{"algebraic", by_category[0]}, {"parallel", by_category[1]}, {"hybrid", by_category[2]}};
  summary["stage_seconds"] = {
      {"enumerate", enumerate_seconds}, {"prune", prune_seconds}, {"render", render_seconds}, {"check", check_seconds}};
  summary["seconds"] = since(start);
  summary["peak_memory_mib"] = peak_memory_mib();
  summary["settings"] = settings;
  result.rules.summary = summary;
  result.summary = std::move(summary);
  return result;
}

std::string rules_spec_text(const spec::Library& library, const GenerateResult& result, const std::string& directory) {
  const auto& s = result.summary;
  std::string header = "Substitution rules generated by `loom generate`: " + std::to_string(result.rules.rules.size()) + " rules (" +
                       std::to_string(s["by_category"]["algebraic"].get<std::size_t>()) + " algebraic, " +
                       std::to_string(s["by_category"]["parallel"].get<std::size_t>()) + " parallel, " +
                       std::to_string(s["by_category"]["hybrid"].get<std::size_t>()) + " hybrid),\n" +
                       "each checked in double precision at its example sizes and at random sizes.\n" + "Settings: " + s["settings"].dump();
  return spec_file(library, result.rules.rules, directory, header);
}

}  // namespace loom::superopt
