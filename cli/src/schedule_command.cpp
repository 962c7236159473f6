#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/models/load.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/pipeline_order.hpp"
#include "loom/search/plan.hpp"
#include "loom/search/plan_simulation.hpp"
#include "loom/search/profile_db.hpp"
#include "loom/search/schedule_plan.hpp"
#include "loom/verifier/rule_selection.hpp"
#include "number_checks.hpp"
#include "plan_chain.hpp"

namespace loom::cli {
namespace {

struct ScheduleOptions {
  std::string file;
  std::string name;
  std::string machine = "summit";
  int nodes = 1;
  int gpus_per_node = 0;
  std::vector<std::string> rules;
  std::vector<std::string> specs;
  std::string out;
  bool json = false;
};

// The schedule FILE declares by `name`, or its only one.
const spec::ScheduleDecl& chosen_schedule(const spec::Library& library, const ScheduleOptions& opt) {
  const std::filesystem::path file = std::filesystem::weakly_canonical(opt.file);
  std::vector<const spec::ScheduleDecl*> in_file;
  for (const spec::ScheduleDecl* s : library.schedules())
    if (std::filesystem::weakly_canonical(s->loc.file) == file) in_file.push_back(s);
  if (!opt.name.empty()) {
    for (const spec::ScheduleDecl* s : in_file)
      if (s->name == opt.name) return *s;
    throw LoomError(opt.file + ": no schedule is called '" + opt.name + "'");
  }
  if (in_file.empty()) throw LoomError(opt.file + ": the file declares no schedule");
  if (in_file.size() > 1) {
    std::string names;
    for (const spec::ScheduleDecl* s : in_file) names += (names.empty() ? "" : ", ") + s->name;
    throw LoomError(opt.file + ": the file declares several schedules (" + names + "): choose one with --name");
  }
  return *in_file.front();
}

int run_schedule_check(const ScheduleOptions& opt) {
  std::vector<std::string> specs = spec::Library::paths_or_bundled(opt.specs);
  specs.push_back(opt.file);
  const spec::Library library = spec::Library::load(specs);
  const spec::ScheduleDecl& schedule = chosen_schedule(library, opt);
  search::Machine machine = search::load_machine(opt.machine).with_nodes(opt.nodes);
  if (opt.gpus_per_node > 0) machine = machine.with_devices_per_node(opt.gpus_per_node);
  // Proofs are looked up only for a schedule that applies rules.
  const bool applies = std::any_of(schedule.stmts.begin(), schedule.stmts.end(),
                                   [](const spec::ScheduleStmt& st) { return st.kind == spec::ScheduleStmtKind::Apply; });
  const std::vector<std::string> rule_files = opt.rules.empty() ? verifier::bundled_rule_libraries() : opt.rules;
  const verifier::RuleSelection selection = applies ? verifier::select_rules(library, specs, rule_files, false) : verifier::RuleSelection{};
  const search::ProfileDatabase no_profiles;
  search::CostModel cost_model(library, machine, &no_profiles);
  // A model the spec files declare (this one, or one it imports) before the zoo's of the same name.
  const spec::ModelDecl* declared = library.find_model(schedule.model);
  models::ModelRequest request{declared ? declared->loc.file + ":" + schedule.model : schedule.model, {}, {}};
  for (const auto& s : schedule.sizes) request.params[s.name] = s.default_value;
  models::LoadedModel model;
  try {
    model = models::load_model(library, request);
  } catch (const LoomError& e) {
    throw LoomError({{schedule.loc, "schedule '" + schedule.name + "' is for model '" + schedule.model + "': " + e.what()}});
  }
  cost_model.keep_fixed(model.fixed);
  search::Plan plan = search::plan_from_schedule(library, schedule, model.graph, selection.rules, cost_model);
  plan.model = model.name;
  plan.fixed_weights = search::fixed_weights_in(plan.graph, model.fixed);
  plan.loss = cost_model.loss();
  bind_rule_hashes(plan, library);
  if (!opt.out.empty()) search::save_plan(plan, opt.out);

  const std::vector<double> memory = search::plan_device_memory(plan, cost_model, library);
  const double peak = search::fullest_device_bytes(memory);
  std::size_t split = 0, operators = 0;
  for (const pcg::Node& n : plan.graph.nodes())
    if (cost_model.is_compute(n)) {
      ++operators;
      split += n.tasks() > 1 ? 1 : 0;
    }
  const std::vector<int> lap_of = search::pipeline_laps(plan.graph, plan.pipeline.stages, machine.devices());
  const int laps = 1 + (lap_of.empty() ? 0 : *std::max_element(lap_of.begin(), lap_of.end()));
  // Stages that cannot each keep their own order: every process runs the first stage's.
  const bool one_order =
      plan.pipeline.runs_micro_batches() && plan.pipeline.stages > 1 &&
      search::runs_in_one_order(plan.graph, plan.pipeline.stages, machine.devices(), cost_model.gradient_values(plan.graph));
  if (opt.json) {
    nlohmann::json subs = nlohmann::json::array();
    for (const auto& s : plan.substitutions) subs.push_back({{"rule", s.rule}, {"status", s.status}});
    std::cout << nlohmann::json{{"ok", true},
                                {"schedule", schedule.name},
                                {"model", plan.model},
                                {"machine", machine.name},
                                {"devices", machine.devices()},
                                {"operators", operators},
                                {"split_operators", split},
                                {"substitutions", subs},
                                {"order", plan.order.size()},
                                {"recompute", plan.recompute.size()},
                                {"pipeline",
                                 {{"stages", plan.pipeline.stages},
                                  {"microbatches", plan.pipeline.microbatches},
                                  {"laps", laps},
                                  {"one_order", one_order},
                                  {"order", plan.pipeline.order == search::PipelineOrder::GPipe ? "gpipe" : "1f1b"}}},
                                {"iteration_seconds", plan.iteration_seconds},
                                {"peak_memory_bytes", peak},
                                {"out", opt.out.empty() ? nlohmann::json(nullptr) : nlohmann::json(opt.out)}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << "schedule " << schedule.name << " (" << schedule.loc.to_string() << ") is valid: " << plan.model << " on " << machine.name
            << " (" << machine.devices() << " devices)\n"
            << "  operators:       " << operators << ", " << split << " of them split\n"
            << "  substitutions:   " << plan.substitutions.size();
  for (const auto& s : plan.substitutions) std::cout << (&s == &plan.substitutions.front() ? " (" : ", ") << s.rule << " " << s.status;
  std::cout << (plan.substitutions.empty() ? "\n" : ")\n") << "  order:           " << plan.order.size() << " edge(s), no cycle\n"
            << "  recompute:       " << plan.recompute.size() << " operator(s)\n"
            << "  pipeline:        " << plan.pipeline.stages << " stage(s), " << plan.pipeline.microbatches << " micro-batch(es)"
            << (plan.pipeline.stages > 1 ? (plan.pipeline.order == search::PipelineOrder::GPipe ? ", GPipe" : ", 1F1B") : "")
            << (laps > 1 ? ", " + std::to_string(laps) + " laps round the stages" : std::string())
            << (one_order ? "; every stage runs the first stage's order (a gradient goes back round the laps, or an operator "
                            "spans stages)"
                          : "")
            << "\n"
            << "  iteration:       " << std::fixed << std::setprecision(3) << plan.iteration_seconds * 1e3 << " ms (simulated)\n"
            << "  peak memory:     " << std::setprecision(1) << peak / (1 << 20) << " MiB on one device\n";
  if (!opt.out.empty())
    std::cout << "wrote " << opt.out << " (loom simulate --plan " << opt.out << ", loom train --plan " << opt.out << ")\n";
  return 0;
}

}  // namespace

void add_schedule_command(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand("schedule",
                                 "Plans written by hand in the spec language (`schedule NAME for MODEL { ... }`): operators cut by "
                                 "the splits their specs derive or by proved rules, pieces assigned to devices, ordered in time, "
                                 "micro-batched and recomputed. See docs/language.md, section Schedules.");
  cmd->require_subcommand(1);
  auto opt = std::make_shared<ScheduleOptions>();
  auto* check = cmd->add_subcommand(
      "check",
      "Validate a schedule: every name names an operator, every split is one the spec derives, every rule applied is proved "
      "and matches, every piece has a device, no order runs against the data or closes a cycle (a deadlock, reported with "
      "its operators and the lines that ordered them), stages follow the data (data that goes back to an earlier stage starts a lap round "
      "them, as a recycling pass does) and micro-batches divide the batch. A valid "
      "schedule becomes a loom-plan (--out) that simulate, train and Studio read like any other.");
  check->add_option("file", opt->file, "a .loom file declaring the schedule")->required()->check(CLI::ExistingFile);
  check->add_option("--name", opt->name, "which schedule of the file (default: its only one)");
  check->add_option("--machine", opt->machine, "a bundled machine (summit, p100, k80, dgx_h100, cpu_host) or a machine file")
      ->default_val("summit");
  check->add_option("--nodes", opt->nodes, "number of nodes")->default_val(1)->check(positive_number());
  check->add_option("--gpus-per-node", opt->gpus_per_node, "devices per node (default: the machine's)")->check(positive_number());
  check->add_option("--rules", opt->rules,
                    "verified rule libraries whose proved rules `apply` may name (default: those of `loom optimize`, the bundled "
                    "specs/rules/unity, generated and feature_maps.verified.json)");
  check->add_option("--specs", opt->specs, "spec files or directories (default: the bundled specs/)");
  check->add_option("-o,--out", opt->out, "write the plan (loom-plan JSON)");
  check->add_flag("--json", opt->json, "print the result as JSON");
  check->callback([opt, &status] { status = run_schedule_check(*opt); });
}

}  // namespace loom::cli
