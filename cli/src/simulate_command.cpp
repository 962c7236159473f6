#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/models/load.hpp"
#include "loom/runtime/trainer.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/output_loss.hpp"
#include "loom/search/pipeline.hpp"
#include "loom/search/plan.hpp"
#include "loom/search/plan_cost.hpp"
#include "loom/search/plan_simulation.hpp"
#include "loom/search/simulator.hpp"
#include "loom/search/trace_file.hpp"
#include "loom/verifier/result_cache.hpp"
#include "measured_costs.hpp"
#include "model_options.hpp"
#include "output_paths.hpp"
#include "plan_chain.hpp"
#include "progress_line.hpp"

namespace loom::cli {
namespace {

struct SimulateOptions {
  std::string plan;
  std::vector<std::string> specs;
  MeasureOptions costs;
  std::string optimizer = "sgd";
  std::string loss;  // none: the plan's
  bool json = false;
  bool quiet = false;
  int timeline_rows = 20;
  std::string trace;
};

// An imported model's own values (weights, ids, masks), read again from its file, where they fit
// the plan's source graph: the values its tasks are measured on.
runtime::NamedTensors<double> imported_values(const search::Plan& plan, const spec::Library& library) {
  if (plan.source.size() == 0 || !models::is_onnx_path(plan.model)) return {};
  const std::string why = "; its tasks are measured on the values of weights drawn from the seed";
  if (!std::filesystem::exists(plan.model)) {
    std::cerr << "warning: the plan's model, " << plan.model << ", is not there" << why << "\n";
    return {};
  }
  std::map<std::string, std::vector<std::int64_t>> dims;
  for (const pcg::Node& n : plan.source.nodes())
    if (n.is_graph_input()) dims.emplace(n.name, n.output_shapes.front().dims);
  runtime::NamedTensors<double> values;
  try {
    models::ModelRequest request;
    request.model = plan.model;
    for (auto& [name, value] : models::load_model(library, request).constants) {
      auto node = dims.find(name);
      if (node != dims.end() && node->second == value.dims) values.emplace(name, std::move(value));
    }
  } catch (const LoomError& e) {
    std::cerr << "warning: the plan's model, " << plan.model << ", could not be read (" << e.what() << ")" << why << "\n";
  }
  return values;
}

int run_simulate(const SimulateOptions& opt) {
  if (!opt.trace.empty()) require_writable_directory(opt.trace, "--trace");
  ProgressLine progress(!opt.json && !opt.quiet);
  progress.show("loading", opt.plan);
  const auto specs = ModelOptions{}.spec_paths(opt.specs, opt.plan);
  const spec::Library library = spec::Library::load(specs);
  const search::Plan plan = search::load_plan(opt.plan, library);
  MeasuredCosts costs(library, plan.machine, opt.costs);
  const runtime::NamedTensors<double> source_values = costs.measures() ? imported_values(plan, library) : runtime::NamedTensors<double>{};
  if (plan.source.size() > 0) costs.measure_on_values_of(plan.source, source_values, runtime::TrainSettings{}.seed);
  progress.show("building tasks",
                std::to_string(plan.graph.size()) + " nodes" + (costs.measures() ? ", measuring what the profile lacks" : ""));
  search::CostModel model = costs.cost_model(plan.machine, opt.optimizer);
  model.keep_fixed(plan.fixed_weights);
  model.take_loss(opt.loss.empty() ? plan.loss.value_or(search::LossKind::CrossEntropy) : search::loss_from_name(opt.loss));
  const search::TaskGraph tasks = search::plan_task_graph(plan, model, library);
  costs.save();
  progress.show("simulating", std::to_string(tasks.tasks.size()) + " tasks");
  const search::Timeline timeline = search::simulate(tasks);
  const std::vector<double> memory = search::plan_device_memory(plan, model, library);
  const std::vector<double> activations = search::plan_device_memory(plan, model, library, true);
  const std::vector<double> busy = timeline.busy_seconds(tasks);
  const int overfull = search::first_overfull_device(memory, plan.machine);
  progress.show("checking the soundness chain", "of the plan's rules");
  const audit::PlanAudit chain = audit_with_cache(plan, library, verifier::ResultCache::default_path(), true);
  progress.clear();
  if (!opt.trace.empty())
    search::write_trace(opt.trace, search::simulated_spans(tasks, timeline),
                        "loom simulate: " + (plan.model.empty() ? opt.plan : plan.model) + " on " + plan.machine.name);

  if (opt.json) {
    nlohmann::json devices = nlohmann::json::array();
    for (int d = 0; d < plan.machine.devices(); ++d)
      devices.push_back({{"device", d},
                         {"busy_seconds", busy[static_cast<std::size_t>(d)]},
                         {"memory_bytes", memory[static_cast<std::size_t>(d)]},
                         {"activation_bytes", activations[static_cast<std::size_t>(d)]}});
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < tasks.tasks.size(); ++i) {
      const auto& t = tasks.tasks[i];
      nlohmann::json row = {{"task", tasks.label_of(i)},
                            {"kind", search::task_kind_name(t.kind)},
                            {"start", timeline.start[i]},
                            {"finish", timeline.finish[i]}};
      if (t.kind != search::TaskKind::Join) row["device"] = t.device;
      if (t.kind == search::TaskKind::Communication) row["peer"] = t.peer;
      rows.push_back(std::move(row));
    }
    std::cout << nlohmann::json{{"plan", opt.plan},
                                {"machine", plan.machine.name},
                                {"devices", plan.machine.devices()},
                                {"iteration_seconds", timeline.makespan},
                                {"loss", search::loss_name(model.loss())},
                                {"tasks", tasks.tasks.size()},
                                {"profile", costs.path().empty() ? nlohmann::json(nullptr) : nlohmann::json(costs.path())},
                                {"measured_tasks", costs.measured()},
                                {"measure_seconds", costs.measure_seconds()},
                                {"per_device", devices},
                                {"fits_memory", overfull < 0},
                                {"chain", {{"holds", chain.holds()}, {"verdict", chain.verdict()}}},
                                {"timeline", rows},
                                {"trace", opt.trace.empty() ? nlohmann::json(nullptr) : nlohmann::json(opt.trace)}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << opt.plan << ": " << (plan.model.empty() ? "plan" : plan.model) << " on " << plan.machine.name << " ("
              << plan.machine.devices() << " devices), " << plan.graph.size() << " nodes, " << tasks.tasks.size() << " tasks\n";
    if (plan.pipeline.enabled())
      std::cout << "pipeline: " << plan.pipeline.stages << (plan.pipeline.stages == 1 ? " stage, " : " stages, ")
                << plan.pipeline.microbatches << " micro-batches ("
                << (plan.pipeline.order == search::PipelineOrder::GPipe ? "GPipe" : "1F1B") << ")\n";
    if (!plan.schedule.empty())
      std::cout << "schedule: " << plan.schedule << ", " << plan.order.size() << " order edge(s), " << plan.recompute.size()
                << " operator(s) recomputed\n";
    std::cout << "soundness " << chain.verdict() << "\n";
    std::cout << "costs: " << costs.summary() << "\n";
    std::cout << "loss: " << search::loss_name(model.loss())
              << (!opt.loss.empty() ? " (--loss)"
                  : plan.loss       ? " (the plan's)"
                                    : " (the default; the plan records none)")
              << "\n";
    std::cout << "simulated iteration: " << std::setprecision(4) << timeline.makespan * 1e3 << " ms\n";
    std::cout << "device   busy (ms)   memory (MiB)   of which activations (MiB)\n";
    for (int d = 0; d < plan.machine.devices(); ++d)
      std::cout << std::setw(6) << d << std::setw(12) << std::fixed << std::setprecision(3) << busy[static_cast<std::size_t>(d)] * 1e3
                << std::setw(15) << std::setprecision(1) << memory[static_cast<std::size_t>(d)] / (1024.0 * 1024.0) << std::setw(29)
                << std::setprecision(3) << activations[static_cast<std::size_t>(d)] / (1024.0 * 1024.0) << "\n";
    std::vector<std::size_t> order(tasks.tasks.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return timeline.start[a] < timeline.start[b]; });
    const std::size_t shown = std::min<std::size_t>(order.size(), static_cast<std::size_t>(opt.timeline_rows));
    std::cout << "timeline (first " << shown << " of " << order.size() << " tasks; --timeline N for more):\n";
    for (std::size_t k = 0; k < shown; ++k) {
      const std::size_t i = order[k];
      std::cout << "  " << std::setw(10) << std::setprecision(4) << timeline.start[i] * 1e3 << " - " << std::setw(10)
                << timeline.finish[i] * 1e3 << " ms  " << tasks.label_of(i) << "\n";
    }
    if (!opt.trace.empty())
      std::cout << "wrote the timeline of every task to " << opt.trace << " (open it in chrome://tracing or ui.perfetto.dev)\n";
  }
  if (overfull >= 0) {
    std::cerr << opt.plan << ": does not fit: device " << overfull << " needs "
              << memory[static_cast<std::size_t>(overfull)] / (1024.0 * 1024.0 * 1024.0) << " GiB of its "
              << plan.machine.device.memory_bytes / (1024.0 * 1024.0 * 1024.0) << " GiB\n";
    return 1;
  }
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<SimulateOptions>();
  auto* cmd =
      app.add_subcommand("simulate",
                         "Simulate one training iteration of a plan (loom-plan JSON) on its machine: the iteration time, each "
                         "device's busy time and memory, and the task timeline. Exits non-zero when the plan does not fit in memory.");
  cmd->add_option("--plan", opt->plan, "the plan file")->required();
  cmd->add_option("--specs", opt->specs, "spec files or directories (default: the bundled specs/)");
  add_measure_options(cmd, opt->costs);
  cmd->add_option("--optimizer", opt->optimizer,
                  "the step that updates the weights each iteration, sgd or adam: what it reads and writes, or its measured "
                  "updates in --profile")
      ->default_val("sgd")
      ->check(CLI::IsMember({"sgd", "adam"}));
  cmd->add_option("--loss", opt->loss,
                  "the loss training will take, cross-entropy or mse (default: the one the plan was optimized for, else "
                  "cross-entropy): over logits split along their classes, cross-entropy has the devices holding them gather "
                  "each row's statistics")
      ->check(CLI::IsMember({"cross-entropy", "mse"}));
  cmd->add_option("--timeline", opt->timeline_rows, "how many timeline rows to print")->default_val(20);
  cmd->add_option("--trace", opt->trace,
                  "write every task's place in the simulated iteration to this file (trace-event JSON for chrome://tracing or "
                  "ui.perfetto.dev): a row per device with its compute, and a lane of the messages and collectives it sends; "
                  "operator tasks are labelled as `loom train --trace` labels a measured step's");
  cmd->add_flag(
      "--json", opt->json,
      "print everything as JSON (iteration_seconds, per_device with memory_bytes and of it activation_bytes, fits_memory, timeline, "
      "the trace file)");
  cmd->add_flag("-q,--quiet", opt->quiet, "no progress output");
  cmd->callback([opt, &status] { status = run_simulate(*opt); });
}

}  // namespace loom::cli
