#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/models/load.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/trainer.hpp"
#include "loom/search/optimizer.hpp"
#include "loom/search/output_loss.hpp"
#include "loom/search/plan.hpp"
#include "loom/search/profile_db.hpp"
#include "loom/search/replay.hpp"
#include "loom/verifier/rule_selection.hpp"
#include "measured_costs.hpp"
#include "model_options.hpp"
#include "number_checks.hpp"
#include "plan_chain.hpp"
#include "progress_line.hpp"

namespace loom::cli {
namespace {

struct OptimizeOptions {
  ModelOptions model;
  std::string machine = "summit";
  MeasureOptions costs;
  std::string optimizer = "sgd";
  std::string loss = "cross-entropy";
  int nodes = 1;
  int gpus_per_node = 0;
  std::vector<std::string> rules;
  bool include_unverified = false;
  std::vector<std::string> specs;
  std::string out;
  search::OptimizeSettings settings;
  bool no_split = false;
  bool no_cache = false;
  bool no_baselines = false;
  bool no_pipeline = false;
  bool pipeline_unbounded = false;
  bool no_recompute = false;
  bool no_coshard = false;
  bool json = false;
  bool quiet = false;
};

std::string ms(double seconds) {
  if (!std::isfinite(seconds)) return "does not fit";
  std::ostringstream os;
  os << std::fixed << std::setprecision(3) << seconds * 1e3 << " ms";
  return os.str();
}

int run_optimize(OptimizeOptions opt) {
  const auto specs = opt.model.spec_paths(opt.specs);
  const spec::Library library = spec::Library::load(specs);
  search::Machine machine = search::load_machine(opt.machine).with_nodes(opt.nodes);
  if (opt.gpus_per_node > 0) machine = machine.with_devices_per_node(opt.gpus_per_node);
  const models::LoadedModel model = models::load_model(library, opt.model.request(library));
  const std::vector<std::string> rule_files = opt.rules.empty() ? verifier::bundled_rule_libraries() : opt.rules;
  verifier::RuleSelection selection = verifier::select_rules(library, specs, rule_files, opt.include_unverified);
  if (!selection.unproved.empty() && !opt.include_unverified) {
    std::string list;
    for (const auto& u : selection.unproved) list += "\n  " + u;
    throw LoomError("refusing rules without a valid proof:" + list +
                    "\nprove them with `loom verify FILE -o FILE.verified.json` (a changed library: `loom verify LIB.json --in-place`) "
                    "and pass the verified library, or give --include-unverified to use them anyway");
  }
  const bool show_progress = !opt.json && !opt.quiet;
  if (!opt.quiet && !selection.left_out.empty())
    std::cerr << "note: " << selection.left_out.size()
              << " rules are left out, their proofs having failed (the first: " << selection.left_out.front() << ")\n";
  // Warnings, so -q does not silence them.
  if (!opt.rules.empty() && selection.rules.empty())
    std::cerr << "warning: the rule libraries given with --rules hold no rule the search can use: it only maps the graph\n";
  if (opt.include_unverified && !selection.unproved.empty()) {
    std::cerr << "warning: --include-unverified: " << selection.unproved.size()
              << " rules without a valid proof may be applied; the plan records it, and `loom train` refuses the plan unless "
                 "its audit proves them:";
    for (const auto& u : selection.unproved) std::cerr << "\n  " << u;
    std::cerr << "\n";
  }
  std::vector<pcg::Rule> rules = std::move(selection.rules);

  opt.settings.joint.split = !opt.no_split;
  opt.settings.joint.mapping.share_cache = !opt.no_cache;
  opt.settings.baselines = !opt.no_baselines;
  opt.settings.pipeline = !opt.no_pipeline;
  opt.settings.pipeline_options.bounded = !opt.pipeline_unbounded;
  opt.settings.recompute = !opt.no_recompute;
  opt.settings.coshard = !opt.no_coshard;
  MeasuredCosts costs(library, machine, opt.costs);
  costs.measure_on_values_of(model.graph, model.constants, runtime::TrainSettings{}.seed);
  search::CostModel cost_model = costs.cost_model(machine, opt.optimizer);
  cost_model.keep_fixed(model.fixed);
  cost_model.take_loss(search::loss_from_name(opt.loss));
  ProgressLine progress(show_progress);
  const search::OptimizeReport report =
      search::optimize(library, model.graph, rules, cost_model, opt.settings, [&](const search::OptimizeProgress& p) {
        if (p.joint.segments == 0) return progress.show(p.stage, "");
        progress.show(p.stage,
                      "segment " + std::to_string(p.joint.segment) + "/" + std::to_string(p.joint.segments) + ", " +
                          std::to_string(p.joint.explored) + " graphs expanded",
                      static_cast<double>(p.joint.segment) / static_cast<double>(p.joint.segments));
      });
  progress.clear();

  search::Plan plan;
  plan.model = model.name;
  plan.machine = machine;
  plan.graph = report.plan;
  plan.substitutions = report.substitutions;
  plan.include_unverified = opt.include_unverified;
  plan.source = model.graph;
  plan.rules = search::rules_used(rules, report.substitutions);
  bind_rule_hashes(plan, library);
  plan.pipeline = report.pipeline;
  plan.recompute = report.recompute;
  plan.fixed_weights = search::fixed_weights_in(plan.graph, model.fixed);
  plan.loss = cost_model.loss();
  plan.iteration_seconds = report.best_seconds;
  if (!opt.out.empty()) search::save_plan(plan, opt.out);
  costs.save();

  nlohmann::json subs = nlohmann::json::array();
  for (const auto& s : report.substitutions)
    subs.push_back({{"rule", s.rule}, {"category", s.category}, {"status", s.status}, {"reversed", s.reversed}});
  const nlohmann::json coshard = report.coshard.operators == 0 ? nlohmann::json(nullptr)
                                                               : nlohmann::json{{"pieces_per_device", report.coshard.pieces_per_device},
                                                                                {"operators", report.coshard.operators}};
  auto seconds_or_null = [](double s) { return std::isfinite(s) ? nlohmann::json(s) : nlohmann::json(nullptr); };
  nlohmann::json joint_subs = nlohmann::json::array();
  for (const auto& s : report.joint.sequence) joint_subs.push_back({{"rule", s.rule}, {"reversed", s.reversed}});
  nlohmann::json stages = nlohmann::json::array();
  for (const search::StageTime& t : report.stages)
    stages.push_back({{"stage", t.stage}, {"seconds", t.seconds}, {"alongside_previous", t.alongside}});
  if (opt.json) {
    nlohmann::json baselines = nlohmann::json::object(), speedups = nlohmann::json::object();
    for (const auto& [name, seconds] : report.baselines) {
      baselines[name] = std::isfinite(seconds) ? nlohmann::json(seconds) : nlohmann::json(nullptr);
      speedups[name] = std::isfinite(seconds) ? nlohmann::json(seconds / report.best_seconds) : nlohmann::json(nullptr);
    }
    std::cout << nlohmann::json{{"model", model.name},
                                {"machine", machine.name},
                                {"devices", machine.devices()},
                                {"rules", rules.size()},
                                {"include_unverified", opt.include_unverified},
                                {"profile", costs.path().empty() ? nlohmann::json(nullptr) : nlohmann::json(costs.path())},
                                {"profile_entries", costs.entries()},
                                {"measured_tasks", costs.measured()},
                                {"measure_seconds", costs.measure_seconds()},
                                {"single_device_seconds", report.initial_seconds},
                                {"best_seconds", report.best_seconds},
                                {"chosen", report.chosen},
                                {"joint_seconds", report.joint_seconds},
                                {"refined_seconds", report.refined_seconds},
                                {"refinement_start", report.refinement_start},
                                {"joint_substitutions", joint_subs},
                                {"pipeline_seconds", seconds_or_null(report.pipeline_seconds)},
                                {"pipeline_none_because", report.pipeline_none_because},
                                {"pipeline", {{"stages", report.pipeline.stages}, {"microbatches", report.pipeline.microbatches}}},
                                {"pipeline_stage_sizes", report.pipeline_stage_sizes},
                                {"pipeline_interlaced", report.pipeline_interlaced},
                                {"pipeline_looping", report.pipeline_looping},
                                {"cuts", report.joint.cuts},
                                {"recomputed_operators", report.recompute.size()},
                                {"coshard", coshard},
                                {"baselines", baselines},
                                {"speedups", speedups},
                                {"search_seconds", report.search_seconds},
                                {"total_seconds", report.total_seconds},
                                {"stages", stages},
                                {"segments", report.joint.segments},
                                {"explored", report.joint.explored},
                                {"generated", report.joint.generated},
                                {"rewrites", report.joint.rewrites},
                                {"mapping_subproblems", report.joint.mapping.solved},
                                {"mapping_cache_hits", report.joint.mapping.cache_hits},
                                {"substitutions", subs}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << model.name << " on " << machine.name << " (" << machine.devices() << " devices), " << rules.size() << " rules\n";
    std::cout << "  costs:           " << costs.summary() << "\n";
    std::cout << "  one device:      " << ms(report.initial_seconds) << " per iteration (simulated)\n";
    for (const auto& [name, seconds] : report.baselines) {
      std::cout << "  " << std::left << std::setw(16) << (name + ":") << std::right << ms(seconds);
      if (std::isfinite(seconds)) std::cout << "  (best is " << std::setprecision(3) << seconds / report.best_seconds << "x faster)";
      std::cout << "\n";
    }
    if (opt.settings.pipeline) {
      std::cout << "  pipeline (1F1B): "
                << (report.pipeline_none_because.empty() ? ms(report.pipeline_seconds) : "none: " + report.pipeline_none_because);
      if (report.pipeline_none_because.empty() && !report.pipeline_stage_sizes.empty()) {
        std::cout << "  (stages of ";
        for (std::size_t s = 0; s < report.pipeline_stage_sizes.size(); ++s) std::cout << (s ? "/" : "") << report.pipeline_stage_sizes[s];
        std::cout << " nodes" << (report.pipeline_interlaced ? "; the operators sharing a weight across stages interlaced" : "")
                  << (report.pipeline_looping ? "; each pass round the stages, with its weights" : "") << ")";
      }
      std::cout << "\n";
    }
    std::cout << "  best plan:       " << ms(report.best_seconds) << ", found by " << report.chosen;
    if (report.pipeline.enabled())
      std::cout << " (" << report.pipeline.stages << " stages, " << report.pipeline.microbatches << " micro-batches)";
    if (!report.recompute.empty())
      std::cout << " (no plan fit in memory: " << report.recompute.size()
                << " operators recompute their outputs for the backward pass instead of keeping them"
                << (report.coshard.operators ? "; " + std::to_string(report.coshard.operators) + " operators co-sharded, each in " +
                                                   std::to_string(report.coshard.pieces_per_device) + " pieces in turn per device"
                                             : std::string())
                << ")";
    std::cout << "\n"
              << "  joint search:    " << report.joint.segments << " segments, " << report.joint.explored << " graphs expanded, "
              << report.joint.rewrites << " reached, " << report.joint.generated << " costed, " << std::setprecision(3)
              << report.search_seconds << " s (" << report.total_seconds << " s in all)\n"
              << "  time by stage:  ";
    for (const search::StageTime& t : report.stages)
      std::cout << " " << t.stage << " " << std::setprecision(t.seconds < 1 ? 2 : 3) << t.seconds << " s (" << std::setprecision(0)
                << std::fixed << 100 * t.seconds / std::max(report.total_seconds, 1e-9) << (t.alongside ? "%, alongside" : "%") << ")"
                << std::defaultfloat << (&t == &report.stages.back() ? "\n" : ",");
    std::cout << "  substitutions:   " << report.substitutions.size() << "\n";
    for (std::size_t k = 0; k < report.joint.cuts.size(); ++k)
      if (!report.joint.cuts[k].empty()) std::cout << "  cut " << k + 1 << " crossed as " << report.joint.cuts[k] << "\n";
    for (const auto& s : report.substitutions)
      std::cout << "    " << s.rule << " (" << s.category << ", " << s.status << (s.reversed ? ", right to left" : "") << ")\n";
    if (!opt.out.empty()) std::cout << "wrote " << opt.out << " (loom simulate --plan " << opt.out << ")\n";
  }
  return 0;
}

}  // namespace

void add_optimize_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<OptimizeOptions>();
  auto* cmd = app.add_subcommand(
      "optimize",
      "Find a fast plan for training a model on a machine, as Unity does: best-first search over the graphs the rules reach "
      "(algebraic and hybrid substitutions), each costed by a dynamic program that chooses every operator's split and devices "
      "(machine mapping), large graphs searched segment by segment; then the baselines in the same simulated cost model "
      "(data parallel, expert, FlexFlow's MCMC, sequential) and pipeline parallelism (1F1B), and the fastest plan of all. Writes the plan "
      "with --out.");
  add_model_options(*cmd, opt->model)->required();
  cmd->add_option("--machine", opt->machine, "a bundled machine (summit, p100, k80, dgx_h100) or a machine file")->default_val("summit");
  add_measure_options(cmd, opt->costs);
  cmd->add_option("--optimizer", opt->optimizer,
                  "the step that updates the weights each iteration, sgd or adam, as `loom train --optimizer` will run it: what "
                  "it reads and writes, or its measured updates in --profile")
      ->default_val("sgd")
      ->check(CLI::IsMember({"sgd", "adam"}));
  cmd->add_option("--loss", opt->loss,
                  "the loss `loom train --loss` will take, cross-entropy or mse, recorded in the plan: over logits split along "
                  "their classes, cross-entropy has the devices holding them gather each row's statistics")
      ->default_val("cross-entropy")
      ->check(CLI::IsMember({"cross-entropy", "mse"}));
  cmd->add_option("--nodes", opt->nodes, "number of nodes")->default_val(1)->check(positive_number());
  cmd->add_option("--gpus-per-node", opt->gpus_per_node, "devices per node (default: the machine's)")->check(positive_number());
  cmd->add_option("--rules", opt->rules,
                  "verified rule libraries (loom-rules JSON, as `loom verify -o` writes; only rules whose proof still holds are used) "
                  "(default: the bundled specs/rules/unity.verified.json, the hand-written rules; specs/rules/generated.verified.json, "
                  "the rules `loom generate` finds over Unity's op set at up to 3 operators; and specs/rules/feature_maps.verified.json, "
                  "those it finds for ReLU, addition and concatenation over rank-4 feature maps; only their proved rules are used; "
                  "scripts/bundle_rules.sh makes the generated ones again)");
  cmd->add_flag("--include-unverified", opt->include_unverified,
                "also use rules without a valid proof (stale records, .loom rule files); refuted and unknown rules are never used. "
                "The plan records it, and `loom train` audits such a plan before training it");
  cmd->add_option("--alpha", opt->settings.joint.substitution.alpha, "explore graphs up to alpha x the best cost")->default_val(1.05);
  cmd->add_option("--budget", opt->settings.joint.substitution.budget,
                  "graphs costed per segment by the machine mapping: each rewrite waits with an estimate (its parent's cost plus the "
                  "change in the one-device time of the nodes it replaces and inserts) and is costed when its turn comes")
      ->default_val(20);
  cmd->add_option("--max-seconds", opt->settings.joint.substitution.max_seconds,
                  "wall-clock limit of the joint search's substitution search, shared by its segments (0: none)")
      ->default_val(0)
      ->check(non_negative_number());
  cmd->add_flag("--no-split", opt->no_split, "search the whole graph at once instead of segment by segment");
  cmd->add_option("--min-segment", opt->settings.joint.min_segment, "operators per segment at least")
      ->default_val(10)
      ->check(positive_number());
  cmd->add_flag("--no-cache", opt->no_cache, "do not share the mapping's sub-results between candidate graphs");
  cmd->add_option("--views", opt->settings.joint.mapping.max_views, "device offsets tried per operator split")
      ->default_val(2)
      ->check(positive_number());
  cmd->add_option("--mcmc-iterations", opt->settings.mcmc_iterations, "steps of FlexFlow's MCMC (baseline and refinement)")
      ->default_val(300);
  cmd->add_option("-j,--jobs", opt->settings.jobs,
                  "threads: the joint search's segments are searched at once, and the sequential baseline's rewriting beside "
                  "them; then the two walks refining the "
                  "joint plan, the pipeline search and, over a graph no other walk walks, FlexFlow's and the sequential "
                  "baseline's walks run at once, each costing plans on its own (default: the number of cores; the plan "
                  "is the same with any number, unless a walk stops at --mcmc-seconds or the joint search at --max-seconds; where "
                  "tasks are measured, they run one "
                  "after another)")
      ->default_val(std::max(1u, std::thread::hardware_concurrency()))
      ->check(positive_number());
  cmd->add_option("--mcmc-seconds", opt->settings.mcmc_seconds,
                  "time bound of each MCMC walk, as FlexFlow's: it also stops once its best has not improved for half of it; "
                  "the two walks refining the joint plan (from the DP's plan and from data parallelism) get half of it each "
                  "(0: the steps alone bound every walk; results then do not depend on the machine's speed)")
      ->default_val(30)
      ->check(non_negative_number());
  cmd->add_flag("--no-baselines", opt->no_baselines, "skip the baselines");
  cmd->add_flag("--no-pipeline", opt->no_pipeline, "do not try pipeline parallelism (1F1B stages over the whole graph)");
  cmd->add_option("--pipeline-moves", opt->settings.pipeline_options.boundary_moves,
                  "per count of stages, moves of a boundary between pipeline stages tried from stages of equal compute, each kept "
                  "when it makes the pipeline faster or closer to fitting (0: equal stages)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_flag("--pipeline-unbounded", opt->pipeline_unbounded,
                "move pipeline boundaries for every count of stages (by default only for the counts of stages whose equal "
                "stages run within 1.2x of the best equal stages, or do not fit: less time, and it can miss a pipeline that "
                "this full search finds)");
  cmd->add_flag("--no-recompute", opt->no_recompute,
                "when no plan fits in the devices' memory, fail instead of trying the plans found with activation checkpoints "
                "(every 2nd, 3rd or sqrt(n)-th operator keeps its output, the others drop theirs after the forward pass and "
                "compute them again for the backward) and with only the operators that run no contraction or convolution "
                "recomputed (softmax, dropout, activations, normalizations)");
  cmd->add_flag("--no-coshard", opt->no_coshard,
                "when even recomputation does not fit, fail instead of trying those plans co-sharded: every operator that can be "
                "cut 2 or 4 times finer along the dimension it is split by, the pieces of each former piece run in turn on its "
                "device, so that the backward pass computes again and holds one piece of the dropped values at a time");
  cmd->add_option("--specs", opt->specs, "spec files or directories (default: the bundled specs/)");
  cmd->add_option("-o,--out", opt->out, "write the best plan (loom-plan JSON)");
  cmd->add_flag("--json", opt->json, "print the result as JSON (best_seconds, baselines, search_seconds, substitutions, ...)");
  cmd->add_flag("-q,--quiet", opt->quiet, "no progress output");
  cmd->callback([opt, &status] { status = run_optimize(*opt); });
}

}  // namespace loom::cli
