#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/interpreter/rule_files.hpp"
#include "loom/models/load.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/search/plan_cost.hpp"
#include "loom/search/substitution_search.hpp"
#include "model_options.hpp"

namespace loom::cli {
namespace {

struct OptimizeOptions {
  ModelOptions model;
  std::string machine = "summit";
  int nodes = 1;
  int gpus_per_node = 0;
  std::vector<std::string> rules;
  bool include_unverified = false;
  std::vector<std::string> specs;
  std::string out;
  search::SearchOptions search;
  bool json = false;
  bool quiet = false;
};

int run_optimize(const OptimizeOptions& opt) {
  const auto began = std::chrono::steady_clock::now();
  const auto specs = spec::Library::paths_or_bundled(opt.specs);
  const spec::Library library = spec::Library::load(specs);
  search::Machine machine = search::load_machine(opt.machine).with_nodes(opt.nodes);
  if (opt.gpus_per_node > 0) machine = machine.with_devices_per_node(opt.gpus_per_node);
  const models::LoadedModel model = models::load_model(library, opt.model.request());
  const std::vector<std::string> rule_files =
      opt.rules.empty() ? std::vector<std::string>{spec::Library::default_specs_dir() + "/rules/unity.loom"} : opt.rules;
  std::vector<pcg::Rule> rules;
  for (const auto& f : rule_files)
    for (auto& r : spec::load_rule_file(library, specs, f, !opt.include_unverified)) rules.push_back(std::move(r));
  if (rules.empty()) throw LoomError("no rules to search with (a rule library's unproved rules are left out; --include-unverified uses them)");

  const search::CostModel model_cost(library, machine);
  auto cost = [&](const pcg::Graph& g) { return search::search_cost(g, model_cost); };
  const bool show_progress = !opt.json && !opt.quiet;
  const search::SearchResult result = search::search_substitutions(model.graph, rules, library, cost, opt.search, [&](const search::SearchStep& s) {
    if (show_progress)
      std::cerr << "\rsearching: " << s.explored << "/" << opt.search.budget << " graphs expanded, best " << std::setprecision(4)
                << s.best_seconds * 1e3 << " ms" << std::flush;
  });
  if (show_progress) std::cerr << "\n";
  if (!std::isfinite(result.best_seconds))
    throw LoomError(model.name + " does not fit on " + machine.name + " in any plan the search reached (memory or device count)");
  const double search_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();

  search::Plan plan;
  plan.model = model.name;
  plan.machine = machine;
  plan.graph = search::with_default_views(result.best, machine);
  plan.substitutions = result.sequence;
  plan.iteration_seconds = result.best_seconds;
  if (!opt.out.empty()) search::save_plan(plan, opt.out);

  nlohmann::json subs = nlohmann::json::array();
  for (const auto& s : result.sequence) subs.push_back({{"rule", s.rule}, {"category", s.category}, {"status", s.status}});
  if (opt.json) {
    std::cout << nlohmann::json{{"model", model.name},
                                {"machine", machine.name},
                                {"devices", machine.devices()},
                                {"rules", rules.size()},
                                {"initial_seconds", result.initial_seconds},
                                {"best_seconds", result.best_seconds},
                                {"speedup", result.initial_seconds / result.best_seconds},
                                {"explored", result.explored},
                                {"generated", result.generated},
                                {"search_seconds", search_seconds},
                                {"substitutions", subs}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << model.name << " on " << machine.name << " (" << machine.devices() << " devices), " << rules.size() << " rules\n"
              << std::setprecision(4) << "  as given:   " << result.initial_seconds * 1e3 << " ms per iteration (simulated)\n"
              << "  best found: " << result.best_seconds * 1e3 << " ms (" << result.initial_seconds / result.best_seconds << "x), after "
              << result.sequence.size() << " substitutions\n"
              << "  search: " << result.explored << " graphs expanded, " << result.generated << " costed, " << search_seconds << " s\n";
    for (const auto& s : result.sequence) std::cout << "    " << s.rule << " (" << s.category << ", " << s.status << ")\n";
    if (!opt.out.empty()) std::cout << "wrote " << opt.out << " (loom simulate --plan " << opt.out << ")\n";
  }
  return 0;
}

}  // namespace

void add_optimize_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<OptimizeOptions>();
  auto* cmd = app.add_subcommand(
      "optimize",
      "Search for a faster plan for a model on a machine: best-first over the graphs the rules reach (Unity's substitution "
      "search), each costed by simulating a training iteration with every operator's tasks on devices 0, 1, ...; "
      "writes the best plan with --out.");
  cmd->add_option("--model", opt->model.model, "a zoo model name (loom show --list) or an .onnx file")->required();
  add_model_size_options(*cmd, opt->model);
  cmd->add_option("--machine", opt->machine, "a bundled machine (summit, p100, k80, dgx_h100) or a machine file")->default_val("summit");
  cmd->add_option("--nodes", opt->nodes, "number of nodes")->default_val(1)->check(CLI::PositiveNumber);
  cmd->add_option("--gpus-per-node", opt->gpus_per_node, "devices per node (default: the machine's)")->check(CLI::PositiveNumber);
  cmd->add_option("--rules", opt->rules, "rule libraries (loom-rules JSON; proved rules only) or .loom rule files (default: specs/rules/unity.loom)");
  cmd->add_flag("--include-unverified", opt->include_unverified, "also use a rule library's rules that are not proved");
  cmd->add_option("--alpha", opt->search.alpha, "explore graphs up to alpha x the best cost")->default_val(1.05);
  cmd->add_option("--budget", opt->search.budget, "graphs to expand")->default_val(500);
  cmd->add_option("--max-seconds", opt->search.max_seconds, "wall-clock limit of the search (0: none)")->default_val(0);
  cmd->add_option("--specs", opt->specs, "spec files or directories (default: the bundled specs/)");
  cmd->add_option("-o,--out", opt->out, "write the best plan (loom-plan JSON)");
  cmd->add_flag("--json", opt->json, "print the result as JSON (best_seconds, initial_seconds, search_seconds, substitutions, ...)");
  cmd->add_flag("-q,--quiet", opt->quiet, "no progress output");
  cmd->callback([opt, &status] { status = run_optimize(*opt); });
}

}  // namespace loom::cli
