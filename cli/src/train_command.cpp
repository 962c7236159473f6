#include <cstdlib>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/models/load.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/operator_profile.hpp"
#include "loom/runtime/trainer.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/pipeline.hpp"
#include "loom/search/plan.hpp"
#include "loom/search/profile_db.hpp"
#include "loom/search/trace_file.hpp"
#include "model_options.hpp"
#include "number_checks.hpp"
#include "output_paths.hpp"
#include "progress_line.hpp"
#include "run_setup.hpp"

namespace loom::cli {
namespace {

struct TrainOptions {
  ModelOptions model;
  std::string plan;
  std::vector<std::string> specs;
  std::int64_t steps = 10;
  std::string optimizer = "sgd";
  std::optional<double> lr;
  std::string dtype = "float";
  std::string backend = "cpu";
  std::string loss;  // none: the plan's, else cross-entropy
  std::uint64_t seed = 1;
  std::string checkpoint;
  std::int64_t checkpoint_every = 0;
  std::int64_t warmup = 1;
  std::string resume;
  std::string data;
  std::string profile;
  std::string profile_machine = "cpu_host";
  std::string trace;
  std::int64_t trace_step = 0;  // 0: the last step
  bool json = false;
  bool quiet = false;
  bool trust_plan = false;
  bool interpret = false;
  bool whole_batch = false;
};

// `step 3/10 [######----] loss 2.3012  12.4 ms/step  5160 samples/s`.
void draw_progress(ProgressLine& progress, const runtime::StepReport& r, std::int64_t samples) {
  const double done = static_cast<double>(r.step) / static_cast<double>(std::max<std::int64_t>(r.steps, 1));
  std::ostringstream line;
  line << "step " << r.step << "/" << r.steps << " " << ProgressLine::bar(done, 24) << " loss " << std::setprecision(6) << r.loss << "  "
       << std::fixed << std::setprecision(1) << r.seconds * 1e3 << " ms/step  " << std::setprecision(0)
       << static_cast<double>(samples) / r.seconds << " samples/s";
  progress.show("", line.str(), done);
}

nlohmann::json profile_json(const std::vector<runtime::OperatorProfile>& profiles) {
  nlohmann::json out = nlohmann::json::array();
  for (const runtime::OperatorProfile& p : profiles)
    out.push_back({{"node", p.node},
                   {"op", p.op},
                   {"key", p.key.to_string()},
                   {"measured_seconds", p.measured_seconds},
                   {"simulated_seconds", p.simulated_seconds ? nlohmann::json(*p.simulated_seconds) : nlohmann::json(nullptr)},
                   {"tasks", p.tasks},
                   {"backward_seconds", p.backward_seconds},
                   {"backward_tasks", p.backward_tasks}});
  return out;
}

// Where --profile records the run's times: read before training, so a bad machine or database
// stops the command before the run rather than losing it.
struct ProfileTarget {
  search::Machine machine;
  search::ProfileDatabase database;
};

// Adds the run's measured time per task of each operator, layout change and weight update, with
// the roofline the simulator would use instead, to the database and writes it back.
std::vector<runtime::OperatorProfile> record_profile(const spec::Library& library, const pcg::Graph& graph, const TrainOptions& opt,
                                                     ProfileTarget& target, const std::vector<runtime::OperatorTime>& times, int processes,
                                                     const std::set<std::string>& fixed) {
  const std::vector<runtime::OperatorProfile> profiles =
      runtime::operator_profiles(library, graph, target.machine, times, opt.optimizer, processes, fixed);
  runtime::record_profiles(profiles, target.database);
  target.database.save(opt.profile);
  return profiles;
}

int run_train(const TrainOptions& opt, runtime::Transport& transport) {
  const auto specs = opt.model.spec_paths(opt.specs, opt.plan);
  const spec::Library library = spec::Library::load(specs);
  runtime::TrainSettings s;
  s.steps = opt.steps;
  s.optimizer = runtime::optimizer_from_name(opt.optimizer);
  if (opt.lr) s.optimizer.learning_rate = *opt.lr;
  s.seed = opt.seed;
  s.data_file = opt.data;
  s.checkpoint = opt.checkpoint;
  s.checkpoint_every = opt.checkpoint_every;
  s.warmup_steps = opt.warmup;
  s.resume = opt.resume;
  if (opt.dtype != "float" && opt.dtype != "double") throw LoomError("--dtype: '" + opt.dtype + "' is neither float nor double");
  const runtime::KernelRegistry kernels = kernels_for(opt.backend);
  std::optional<ProfileTarget> profile_target;
  if (!opt.profile.empty())
    profile_target = ProfileTarget{search::load_machine(opt.profile_machine), search::ProfileDatabase::load(opt.profile)};
  s.backend = opt.backend == "cuda" ? runtime::Backend::Cuda : runtime::Backend::Cpu;
  s.compile_from_specs = !opt.interpret;
  if (!opt.trace.empty()) {
    if (transport.rank() == 0) require_writable_directory(opt.trace, "--trace");  // the process that writes it
    s.trace_step = opt.trace_step > 0 ? opt.trace_step : opt.steps;
  }

  GraphToRun run = graph_to_run(opt.plan, opt.model, opt.trust_plan, library, transport, !opt.json && !opt.quiet, "train", "training");
  const pcg::Graph& graph = run.graph;
  s.run_name = run.model;
  s.model_values = std::move(run.values);
  s.fixed_weights = std::move(run.fixed);
  s.plan_devices = run.plan_devices;
  s.recompute = run.recompute;
  s.loss = opt.loss.empty() ? run.loss.value_or(runtime::LossKind::CrossEntropy) : runtime::loss_from_name(opt.loss);
  if (run.loss && s.loss != *run.loss && !opt.quiet && transport.rank() == 0)
    std::cerr << "note: training with " << runtime::loss_name(s.loss) << ", while the plan was costed for " << runtime::loss_name(*run.loss)
              << " (loom optimize --loss)\n";
  if (!opt.whole_batch) s.pipeline = run.pipeline;
  if (!opt.plan.empty()) {
    if (!opt.json && !opt.quiet && transport.rank() == 0) {
      std::cerr << "running the plan for " << s.plan_devices << " devices "
                << (transport.size() > 1 ? "on " + std::to_string(transport.size()) + " processes, one per device"
                                         : std::string("in one process (every device's tasks here)"))
                << "\n";
      if (s.pipeline.runs_micro_batches())
        std::cerr << "pipeline: " << s.pipeline.stages << " stages, each step's batch as " << s.pipeline.microbatches
                  << " micro-batches in " << (s.pipeline.order == search::PipelineOrder::GPipe ? "GPipe's" : "1F1B") << " order\n";
    }
  }
  const bool speaks = transport.rank() == 0;
  const std::int64_t samples =
      graph.outputs().empty() || graph.shape_of(graph.outputs()[0]).dims.empty() ? 1 : graph.shape_of(graph.outputs()[0]).dims[0];
  std::function<void(const runtime::StepReport&)> progress;
  ProgressLine line(!opt.json && !opt.quiet && speaks);
  if (!opt.json && !opt.quiet && speaks) progress = [&line, samples](const runtime::StepReport& r) { draw_progress(line, r, samples); };
  const runtime::TrainReport report = opt.dtype == "float" ? runtime::train<float>(library, graph, s, progress, &transport, &kernels)
                                                           : runtime::train<double>(library, graph, s, progress, &transport, &kernels);
  line.finish();
  std::vector<runtime::OperatorProfile> profiles;
  if (!opt.profile.empty()) {
    const std::vector<runtime::OperatorTime> times = runtime::summed_over_processes(report.operator_times, transport);
    // A pipelined step times the tasks of the micro-batch graph.
    const pcg::Graph timed =
        s.pipeline.runs_micro_batches() ? search::micro_batch_graph(graph, library, s.pipeline.microbatches) : pcg::Graph(graph);
    if (speaks) profiles = record_profile(library, timed, opt, *profile_target, times, transport.size(), s.fixed_weights);
  }
  if (!opt.trace.empty() && speaks)
    search::write_trace(opt.trace, report.trace,
                        "loom train: " + s.run_name + ", step " + std::to_string(s.trace_step) + " of " + std::to_string(s.steps) + " on " +
                            std::to_string(transport.size()) + (transport.size() == 1 ? " process" : " processes"),
                        "process");
  std::vector<double> peaks(static_cast<std::size_t>(transport.size()), 0.0);
  peaks[static_cast<std::size_t>(transport.rank())] = static_cast<double>(report.peak_activation_bytes);
  transport.sum(peaks);
  if (!speaks) return 0;
  if (opt.json) {
    std::cout << nlohmann::json{{"model", s.run_name},
                                {"steps", s.steps},
                                {"first_step", report.first_step},
                                {"dtype", opt.dtype},
                                {"optimizer", runtime::optimizer_name(s.optimizer.kind)},
                                {"learning_rate", s.optimizer.learning_rate},
                                {"loss", runtime::loss_name(s.loss)},
                                {"losses", report.losses},
                                {"seconds_per_step", report.seconds_per_step},
                                {"timed_steps", report.timed_steps},
                                {"samples_per_second",
                                 report.seconds_per_step > 0 ? static_cast<double>(samples) / report.seconds_per_step : 0.0},
                                {"processes", transport.size()},
                                {"backend", opt.backend},
                                {"compiled_ops", report.compiled_ops},
                                {"interpreted_ops", report.interpreted_ops},
                                {"peak_activation_bytes", peaks},
                                {"profile", profile_json(profiles)},
                                {"trace", opt.trace.empty() ? nlohmann::json(nullptr) : nlohmann::json(opt.trace)}}
                     .dump()
              << "\n";
    return 0;
  }
  std::cout << s.run_name << ": " << report.losses.size() << " steps, loss " << (report.losses.empty() ? 0.0 : report.losses.front())
            << " -> " << (report.losses.empty() ? 0.0 : report.losses.back()) << ", " << std::fixed << std::setprecision(2)
            << report.seconds_per_step * 1e3 << " ms/step";
  if (report.timed_steps < static_cast<std::int64_t>(report.losses.size()) - report.first_step)
    std::cout << " (over the " << report.timed_steps << " steps after the warm-up)";
  std::cout << "\n";
  print_kernel_routes(report.compiled_ops, report.interpreted_ops, opt.interpret);
  if (!opt.checkpoint.empty()) std::cout << "wrote " << opt.checkpoint << "\n";
  if (!opt.trace.empty())
    std::cout << "wrote the trace of step " << s.trace_step << " to " << opt.trace << " (" << report.trace.size()
              << " spans; open it in chrome://tracing or ui.perfetto.dev)\n";
  if (!opt.profile.empty()) {
    std::cout << "profile: " << profiles.size() << " operators, layout changes and weight updates recorded in " << opt.profile
              << " (device " << opt.profile_machine
              << "), time per task (a weight: per update): forward measured and simulated, backward measured:\n";
    // "-" where there is no figure: a layout change's roofline, a weight update's backward.
    const auto milliseconds = [](std::optional<double> seconds) {
      std::ostringstream out;
      if (!seconds) return std::string("-");
      out << std::fixed << std::setprecision(4) << *seconds * 1e3 << " ms";
      return out.str();
    };
    for (const runtime::OperatorProfile& p : profiles)
      std::cout << "  " << std::left << std::setw(48) << p.key.to_string() << std::right << std::setw(15)
                << milliseconds(p.measured_seconds) << std::setw(15) << milliseconds(p.simulated_seconds) << std::setw(15)
                << milliseconds(p.backward_tasks > 0 ? std::optional<double>(p.backward_seconds) : std::nullopt) << "\n";
  }
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<TrainOptions>();
  auto* cmd = app.add_subcommand(
      "train",
      "Train a model: weights from the seed (an ONNX file's from the file, its scalar constants kept as they are), synthetic data (or "
      "--data), forward, the loss on the first output, "
      "backward, SGD or Adam. With --plan, the plan's graph runs task by task as its machine views place the tasks: "
      "under `mpirun -np N` (N = the plan's devices) each process runs one device and values move between processes "
      "as the parallel operators say; without mpirun one process runs every device. Every run of every plan starts from "
      "the same weights and data, so its losses match the single-process `--model` run. Trains 10 steps unless --steps says otherwise.");
  add_model_options(*cmd, opt->model);
  cmd->add_option("--plan", opt->plan,
                  "a plan written by `loom optimize -o` (run under mpirun -np <its devices>); its soundness chain is audited "
                  "first, as `loom verify PLAN` does, and a plan whose chain does not hold is refused");
  cmd->add_flag("--trust-plan", opt->trust_plan, "train the plan without auditing its soundness chain (prints a warning)");
  cmd->add_option("--specs", opt->specs, "spec files or directories (default: the bundled library)");
  cmd->add_option("--steps", opt->steps, "total training steps (a resumed run continues up to it)")
      ->default_val(10)
      ->check(positive_number());
  cmd->add_option("--optimizer", opt->optimizer, "sgd (lr 0.01) or adam (lr 0.001)")->default_val("sgd");
  cmd->add_option("--lr", opt->lr, "learning rate (default: the optimizer's)")->check(positive_number());
  cmd->add_option("--dtype", opt->dtype, "float or double")->default_val("float");
  cmd->add_option("--backend", opt->backend,
                  "cpu (Eigen kernels, MPI between processes) or cuda (cuBLAS, cuDNN and Loom's kernels on the GPU, NCCL between "
                  "processes; operators without a CUDA kernel run on the CPU)")
      ->default_val("cpu");
  cmd->add_option("--loss", opt->loss,
                  "cross-entropy (on the output's last axis) or mse (default: the one a --plan was optimized for, else "
                  "cross-entropy)")
      ->check(CLI::IsMember({"cross-entropy", "mse"}));
  cmd->add_option("--seed", opt->seed, "seed of the weights (those an ONNX file does not give) and the synthetic data")->default_val(1);
  cmd->add_option("--warmup", opt->warmup,
                  "steps left out of ms/step, seconds_per_step and --profile (the first pays for making buffers); "
                  "none when the run has no more steps than this")
      ->default_val(1)
      ->check(non_negative_number());
  cmd->add_option("--checkpoint", opt->checkpoint, "write a checkpoint here at the end (and with --checkpoint-every)");
  cmd->add_option("--checkpoint-every", opt->checkpoint_every, "also write the checkpoint every N steps")->check(non_negative_number());
  cmd->add_option("--resume", opt->resume, "continue from a checkpoint of the same run");
  cmd->add_option("--data", opt->data, "training data file (the binary format of docs/runtime.md) instead of synthetic data");
  cmd->add_option(
      "--profile", opt->profile,
      "add each operator's measured forward and backward time per task, each layout change's and each weight "
      "update's, with the roofline time the simulator would use, to this "
      "loom-profile database (created if missing, written atomically; `loom simulate --profile` and `loom optimize --profile` read it)");
  cmd->add_option("--profile-machine", opt->profile_machine, "the machine the times are measured on, for the profile's keys and roofline")
      ->default_val("cpu_host");
  cmd->add_option("--trace", opt->trace,
                  "write a timeline of one step to this file (trace-event JSON for chrome://tracing or ui.perfetto.dev): a row per "
                  "process with each operator task forward and backward (and recomputed), each layout change (its messages "
                  "included), the loss (its sum across processes included), the optimizer step, and a lane of each message and "
                  "collective, charged to the node that made it. Operator tasks carry the labels `loom simulate --trace` gives "
                  "them. The processes meet once before the step, so that their clocks start together. Times are the host's: "
                  "with --backend cuda, a kernel's span is its queuing");
  cmd->add_option("--trace-step", opt->trace_step,
                  "the step --trace records, counting from 1 and the steps before a --resume (default: the last; the first pays "
                  "for making buffers and kernels)")
      ->check(positive_number());
  cmd->add_flag("--json", opt->json,
                "print a JSON line with the losses, seconds_per_step, each process's peak_activation_bytes (the most bytes of activations "
                "and their gradients it held at once) and the trace file, if any");
  cmd->add_flag("--interpret", opt->interpret, kInterpretHelp);
  cmd->add_flag("--whole-batch", opt->whole_batch,
                "run a pipelined plan's batch at once rather than as its micro-batches in its stages' order (the losses are the same "
                "but for rounding, and for operators whose output depends on the whole batch, such as batch normalization)");
  cmd->add_flag("-q,--quiet", opt->quiet, "no progress output");
  cmd->callback([opt, &status] {
    if (opt->model.model.empty() && opt->plan.empty()) throw CLI::ValidationError("--model or --plan is required");
    if (opt->trace_step > 0 && opt->trace.empty()) throw CLI::ValidationError("--trace-step: give --trace FILE to write the step to");
    if (opt->trace_step > opt->steps)
      throw CLI::ValidationError("--trace-step " + std::to_string(opt->trace_step) + " is after the run's last step (" +
                                 std::to_string(opt->steps) + ")");
    if (opt->whole_batch && opt->plan.empty()) throw CLI::ValidationError("--whole-batch: only a plan has micro-batches (give --plan)");
    status = run_on_processes(opt->backend, [&](runtime::Transport& transport) { return run_train(*opt, transport); });
  });
}

}  // namespace loom::cli
