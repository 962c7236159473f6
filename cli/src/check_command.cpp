#include <chrono>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/interpreter/axiom_check.hpp"
#include "loom/interpreter/library.hpp"
#include "number_checks.hpp"
#include "progress_line.hpp"

namespace loom::cli {
namespace {

struct CheckOptions {
  std::vector<std::string> paths;
  std::vector<std::string> specs;
  bool json = false;
  bool quiet = false;
  spec::AxiomCheckOptions axioms;
};

int run_check(const CheckOptions& opt) {
  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> given = opt.specs;
  given.insert(given.end(), opt.paths.begin(), opt.paths.end());
  auto paths = spec::Library::paths_or_bundled(given);
  nlohmann::json summary = {{"paths", paths}};
  std::vector<Diagnostic> errors;
  std::optional<spec::Library> library;
  try {
    library.emplace(spec::Library::load(paths));
  } catch (const LoomError& e) {
    errors = e.diagnostics();
    if (errors.empty()) errors.push_back({{}, e.what()});
  }
  nlohmann::json failed = nlohmann::json::array();
  std::size_t checked = 0;
  if (library) {
    const auto& axioms = library->axioms();
    ProgressLine progress(!opt.json && !opt.quiet);
    for (std::size_t i = 0; i < axioms.size(); ++i) {
      progress.show("checking axioms", std::to_string(i + 1) + "/" + std::to_string(axioms.size()),
                    static_cast<double>(i + 1) / static_cast<double>(axioms.size()));
      auto r = spec::check_axiom(*library, *axioms[i], opt.axioms);
      ++checked;
      if (!r.sound)
        failed.push_back(
            {{"axiom", axioms[i]->name}, {"where", axioms[i]->loc.to_string()}, {"problem", r.problem}, {"checked", r.instances > 0}});
    }
    progress.finish();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  summary["files"] = library ? library->files().size() : 0;
  summary["ops"] = library ? library->ops().size() : 0;
  summary["parallel_forms"] = library ? library->parallel_forms().size() : 0;
  summary["fused_forms"] = library ? library->fused_forms().size() : 0;
  summary["axioms"] = checked;
  summary["axioms_failed"] = failed.size();
  summary["failed_axioms"] = failed;
  summary["rules"] = library ? library->rules().size() : 0;
  summary["models"] = library ? library->models().size() : 0;
  nlohmann::json errs = nlohmann::json::array();
  for (const auto& d : errors) errs.push_back(d.to_string());
  summary["errors"] = errs;
  summary["seconds"] = seconds;
  bool ok = errors.empty() && failed.empty();
  summary["ok"] = ok;
  if (opt.json) {
    std::cout << summary.dump(2) << "\n";
  } else {
    for (const auto& d : errors) std::cerr << d.to_string() << "\n";
    for (const auto& f : failed)
      std::cerr << f["where"].get<std::string>() << ": axiom " << f["axiom"].get<std::string>()
                << (f["checked"].get<bool>() ? " is unsound " : " cannot be checked: ") << f["problem"].get<std::string>() << "\n";
    std::cout << (ok ? "ok" : "FAILED") << ": " << summary["files"] << " files, " << summary["ops"] << " ops, " << summary["parallel_forms"]
              << " parallel forms, " << summary["fused_forms"] << " fused forms, " << checked << " axioms checked (" << failed.size()
              << " failed, " << opt.axioms.instances << " instances each), " << summary["rules"] << " rules, " << summary["models"]
              << " models, " << errors.size() << " errors in " << std::fixed;
    std::cout.precision(2);
    std::cout << seconds << " s\n";
  }
  return ok ? 0 : 1;
}

}  // namespace

void add_check_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<CheckOptions>();
  auto* cmd = app.add_subcommand("check",
                                 "Parse and check spec files (default: the bundled specs/), then check every axiom numerically on random "
                                 "instances. Exits non-zero on any error or unsound axiom.");
  cmd->add_option("paths", opt->paths, ".loom files or directories (searched recursively)");
  cmd->add_option("--specs", opt->specs, "more .loom files or directories to check with the paths (the spelling other commands use)");
  cmd->add_flag("--json", opt->json, "print the summary as JSON (keys: ops, parallel_forms, axioms, axioms_failed, errors, ...)");
  cmd->add_flag("-q,--quiet", opt->quiet, "no progress output");
  cmd->add_option("--instances", opt->axioms.instances, "random instances per axiom")->default_val(4)->check(positive_number());
  cmd->add_option("--seed", opt->axioms.seed, "random seed of the axiom check")->default_val(1);
  cmd->add_option("--max-dim", opt->axioms.max_dim, "largest dimension drawn for an axiom's sizes")
      ->default_val(5)
      ->check(positive_number());
  cmd->callback([opt, &status] { status = run_check(*opt); });
}

}  // namespace loom::cli
