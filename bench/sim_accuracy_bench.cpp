// How close the simulator's iteration time is to a real run on this host. For small instances of
// four zoo models and of the GLU classifier of docs/examples/glu.loom (a user-written operator,
// compiled from its spec), under data parallelism, under the plan `search::optimize` finds for the
// cpu_host machine with one device per rank, and, on several ranks, as a 1F1B pipeline of a stage
// per rank and two micro-batches per stage, each training run of a warm-up step and N timed steps
// gives:
//   (a) per operator the task time per task over the timed steps, every rank's tasks together,
//       becomes a profile database entry (with the roofline figure for the same task), and so
//       does each layout change's work per piece outside the messages and collectives, and each
//       weight's optimizer step over the box a rank updates;
//   (b) the plan simulated with the cost model over that database; for comparison, with the cost
//       model measuring each distinct operator task alone before it costs it, as `loom optimize`
//       does with no profile (runtime::LocalTaskMeasurer, on rank 0 while the other ranks wait,
//       anew in each round; layout changes by the roofline) on inputs drawn from the values the
//       model's operators read in one forward pass (runtime::sample_run_values), the same on inputs
//       drawn uniformly in [-1, 1] as the measurer draws them without those values, and over the
//       roofline alone;
//   (c) the real iteration (batch, forward, loss, backward, optimizer step): the mean of the timed
//       steps, the slowest rank's.
// The task times and the iteration come from the same steps, so a host that is slower for a while
// moves both. Every plan runs R times, the plans taking turns, and each row gives the medians over
// its runs and the range of its errors: a shared host's speed varies from one second to the next.
// Prints one row per model and plan; rank 0 prints.
//
//   mpirun --oversubscribe -np 2 loom_sim_accuracy_bench [--steps N] [--repeats R]
//                                                        [--machine NAME|PATH] [--models a,b]
//                                                        [--profile-out FILE] [--measured-out PREFIX]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_support.hpp"
#include "loom/models/load.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/median.hpp"
#include "loom/runtime/mpi_transport.hpp"
#include "loom/runtime/operator_profile.hpp"
#include "loom/runtime/run_values.hpp"
#include "loom/runtime/task_measurement.hpp"
#include "loom/runtime/timed_transport.hpp"
#include "loom/runtime/trainer.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/optimizer.hpp"
#include "loom/search/pipeline.hpp"
#include "loom/search/simulator.hpp"
#include "loom/search/task_graph.hpp"
#include "loom/search/trace_file.hpp"

namespace {

using namespace loom;

const std::string& glu_model() {
  static const std::string model = std::string(LOOM_EXAMPLES_DIR) + "/glu.loom:glu_mlp";
  return model;
}

// The bundled library with the GLU example's operator.
const spec::Library& library() {
  static const spec::Library lib = spec::Library::load(models::spec_paths_for({spec::Library::default_specs_dir()}, glu_model()));
  return lib;
}

const std::vector<pcg::Rule>& rules() { return bench::unity_rules(); }

struct Case {
  std::string name;
  std::string model;  // as --model takes it
  models::ParamValues sizes;
};

// Small enough for a few steps on two cores, large enough that kernels take measurable time.
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"mlp_fig1", "mlp_fig1", {{"batch", 64}, {"in", 256}, {"hidden", 512}, {"out", 16}}},
      {"bert_large",
       "bert_large",
       {{"batch", 4}, {"seq", 32}, {"layers", 1}, {"hidden", 64}, {"heads", 4}, {"vocab", 128}, {"max_positions", 32}}},
      {"alexnet", "alexnet", {{"batch", 8}, {"image", 63}, {"classes", 10}, {"width_div", 8}}},
      {"dlrm", "dlrm", {{"batch", 64}, {"dim", 16}, {"tables", 4}, {"rows", 1000}}},
      {"glu_mlp", glu_model(), {{"batch", 64}, {"in_features", 256}, {"hidden", 512}, {"depth", 2}, {"classes", 16}}},
  };
  return all;
}

struct Settings {
  std::int64_t steps = 30;
  int repeats = 5;
  std::string machine = "cpu_host";
  std::vector<std::string> models;  // empty: all
  std::string profile_out;          // the task times recorded in training
  std::string measured_out;         // the tasks measured alone before simulating, per model: PREFIX.MODEL.json
  std::string trace_out;            // per plan, its last run's last step and its simulation measured first: PREFIX.MODEL.PLAN.*.json
  bool help = false;
};

const char* const kUsage =
    "usage: [mpirun --oversubscribe -np RANKS] loom_sim_accuracy_bench [options]\n"
    "Trains small zoo models and the GLU classifier under data parallelism and under the searched plan, and prints\n"
    "per plan the measured step against the simulator's estimate: over task times recorded in the same runs, over\n"
    "tasks measured alone first (as `loom optimize` does), and over the calibrated roofline alone.\n"
    "  --steps N            timed steps per training run (default 30)\n"
    "  --repeats R          runs per plan, the plans taking turns (default 5)\n"
    "  --machine NAME|PATH  the machine file (default cpu_host), one device per rank\n"
    "  --models a,b         only these rows (mlp_fig1, bert_large, alexnet, dlrm, glu_mlp)\n"
    "  --profile-out FILE   write the task times recorded in training\n"
    "  --measured-out PREFIX  write the tasks measured alone on the run's values before simulating (the last\n"
    "                       round's), each model's to PREFIX.MODEL.json\n"
    "  --trace-out PREFIX   write each plan's last run's last step as `loom train --trace` writes it, to\n"
    "                       PREFIX.MODEL.PLAN.measured.json, and its simulation over the tasks measured alone first as\n"
    "                       `loom simulate --trace` does, to PREFIX.MODEL.PLAN.simulated.json (PLAN: dp, searched, 1f1b);\n"
    "                       the ranks meet once more before each run's last step\n";

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

Settings parse(int argc, char** argv) {
  Settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      s.help = true;
      return s;
    }
    if (i + 1 >= argc) throw LoomError("option " + arg + " needs a value (--help lists the options)");
    const std::string value = argv[++i];
    if (arg == "--steps")
      s.steps = std::stoll(value);
    else if (arg == "--repeats")
      s.repeats = std::stoi(value);
    else if (arg == "--machine")
      s.machine = value;
    else if (arg == "--models")
      s.models = split_list(value);
    else if (arg == "--profile-out")
      s.profile_out = value;
    else if (arg == "--measured-out")
      s.measured_out = value;
    else if (arg == "--trace-out")
      s.trace_out = value;
    else
      throw LoomError("unknown option " + arg +
                      " (expected --steps, --repeats, --machine, --models, --profile-out, --measured-out or --trace-out)");
  }
  if (s.steps < 1) throw LoomError("--steps must be at least 1");
  if (s.repeats < 1) throw LoomError("--repeats must be at least 1");
  return s;
}

double max_over_ranks(double value, runtime::Transport& transport) {
  std::vector<double> all(static_cast<std::size_t>(transport.size()), 0.0);
  all[static_cast<std::size_t>(transport.rank())] = value;
  transport.sum(all);
  return *std::max_element(all.begin(), all.end());
}

// One training run of a plan and its simulation.
struct Run {
  double measured = 0, simulated = 0, automatic = 0, drawn = 0, roofline = 0;  // seconds per iteration
  double simulated_level = 0, automatic_level = 0;  // the same two simulations with the devices kept level (no drift)
  double simulated_waiting = 0;      // seconds per iteration the simulation over in-run times leaves a device not computing (the most)
  double tasks = 0;                  // seconds per iteration in the slowest rank's operator tasks, layout work and updates
  double waiting = 0;                // seconds per iteration the slowest rank spent in the transport
  double backward_over_forward = 0;  // of the measured task time
  std::size_t interpreted = 0, compiled = 0;
  std::vector<search::TraceSpan> measured_trace, automatic_trace;  // with --trace-out: the last step, and the simulation measured first

  double error() const { return simulated / measured - 1; }
  double automatic_error() const { return automatic / measured - 1; }
  double level_error() const { return simulated_level / measured - 1; }
  double automatic_level_error() const { return automatic_level / measured - 1; }
  double drawn_error() const { return drawn / measured - 1; }
  double roofline_error() const { return roofline / measured - 1; }
};

struct Row {
  std::string model, plan;
  pcg::Graph graph;
  std::vector<Run> runs;
  search::Pipeline pipeline;  // none but for a pipelined plan
};

struct Simulated {
  double seconds = 0;                    // one iteration
  double level = 0;                      // the same with the devices kept level where they meet (no drift)
  double waiting = 0;                    // the most time a device in use spends in it not computing
  std::vector<search::TraceSpan> trace;  // where asked for
};

// Whether a simulation is wanted with the devices kept level too.
enum class Level { Too, NotWanted };

// The loss the bench trains with, and its simulations take.
constexpr runtime::LossKind kLoss = runtime::LossKind::MeanSquaredError;

// One iteration of the plan, simulated with `costs` (and with the devices kept level where asked),
// and its spans when `traced`.
Simulated simulated(const pcg::Graph& plan, const search::Pipeline& pipeline, const search::CostModel& costs, Level level,
                    bool traced = false) {
  search::CostModel model = costs;
  model.take_loss(kLoss);
  search::TaskGraph graph = pipeline.runs_micro_batches() ? search::build_pipeline_task_graph(plan, model, pipeline, library())
                                                          : search::build_task_graph(plan, model);
  const search::Timeline timeline = search::simulate(graph);
  double least_busy = timeline.makespan;
  for (double busy : timeline.busy_seconds(graph))
    if (busy > 0) least_busy = std::min(least_busy, busy);
  Simulated out{timeline.makespan, timeline.makespan, timeline.makespan - least_busy,
                traced ? search::simulated_spans(graph, timeline) : std::vector<search::TraceSpan>{}};
  if (level == Level::Too && graph.drift > 0) {
    graph.drift = 0;
    out.level = search::simulate(graph).makespan;
  }
  return out;
}

double simulated_seconds(const pcg::Graph& plan, const search::Pipeline& pipeline, const search::CostModel& model) {
  return simulated(plan, pipeline, model, Level::NotWanted).seconds;
}

Run run_plan(const pcg::Graph& plan, const search::Pipeline& pipeline, const search::Machine& machine, const Settings& s,
             runtime::Transport& transport, search::ProfileDatabase& database, const search::CostModel& measuring_first,
             const search::CostModel& measuring_drawn, bool drawn_first) {
  runtime::TrainSettings train;
  train.pipeline = pipeline;
  train.loss = kLoss;
  train.optimizer.learning_rate = 1e-4;
  train.plan_devices = machine.devices();
  train.warmup_steps = 1;
  train.steps = 1 + s.steps;
  if (!s.trace_out.empty()) train.trace_step = train.steps;
  // The transport of the run, timed: how long this process waits on messages and collectives
  // (the other ranks' work included, as a real run waits for it).
  runtime::TimedTransport timed(transport);
  double waiting = 0, waited_before_step = 0;  // over the timed steps
  const runtime::TrainReport run = runtime::train<float>(
      library(), plan, train,
      [&](const runtime::StepReport& r) {
        if (r.step > train.warmup_steps) waiting += timed.seconds() - waited_before_step;
        waited_before_step = timed.seconds();
      },
      &timed);
  const auto steps = static_cast<double>(run.timed_steps);
  double own_task_seconds = 0;
  for (const auto& t : run.operator_times) own_task_seconds += t.forward_seconds + t.backward_seconds + t.update_seconds;
  const std::vector<runtime::OperatorTime> times = runtime::summed_over_processes(run.operator_times, transport);

  search::ProfileDatabase plan_profile;
  // A pipelined run times the tasks of its micro-batch graph.
  const pcg::Graph timed_graph = pipeline.runs_micro_batches() ? search::micro_batch_graph(plan, library(), pipeline.microbatches) : plan;
  const std::vector<runtime::OperatorProfile> profiles =
      runtime::operator_profiles(library(), timed_graph, machine, times, runtime::optimizer_name(train.optimizer.kind), transport.size());
  runtime::record_profiles(profiles, plan_profile);
  runtime::record_profiles(profiles, database);
  double forward = 0, backward = 0;
  for (const auto& t : times) {
    forward += t.forward_seconds;
    backward += t.backward_seconds;
  }

  Run row;
  row.measured_trace = run.trace;
  row.measured = max_over_ranks(run.seconds_per_step, transport);
  row.tasks = max_over_ranks(own_task_seconds / steps, transport);
  row.waiting = max_over_ranks(waiting / steps, transport);
  const search::CostModel over_run_model(library(), machine, &plan_profile);
  const Simulated over_run = simulated(plan, pipeline, over_run_model, Level::Too);
  row.simulated = over_run.seconds;
  row.simulated_level = over_run.level;
  row.simulated_waiting = over_run.waiting;
  row.roofline = simulated_seconds(plan, pipeline, search::CostModel(library(), machine));
  // Rank 0 measures the tasks while the other ranks wait in a sum (after a short spell of polling,
  // they sleep), so that each task is measured alone, as `loom optimize` measures it; only rank 0
  // prints.
  if (transport.rank() == 0) {
    if (drawn_first) row.drawn = simulated_seconds(plan, pipeline, measuring_drawn);
    Simulated automatic = simulated(plan, pipeline, measuring_first, Level::Too, !s.trace_out.empty());
    row.automatic = automatic.seconds;
    row.automatic_level = automatic.level;
    row.automatic_trace = std::move(automatic.trace);
    if (!drawn_first) row.drawn = simulated_seconds(plan, pipeline, measuring_drawn);
  }
  std::vector<double> rank0_measured{0};
  transport.sum(rank0_measured);
  row.backward_over_forward = forward > 0 ? backward / forward : 0;
  row.interpreted = run.interpreted_ops.size();
  row.compiled = run.compiled_ops.size();
  return row;
}

// The median over a row's runs of one figure.
template <class Figure>
double median(const std::vector<Run>& runs, Figure figure) {
  std::vector<double> values;
  for (const Run& r : runs) values.push_back(figure(r));
  return pcg::median(values);
}

std::string percent(double fraction) {
  std::ostringstream out;
  out << std::showpos << std::fixed << std::setprecision(1) << 100.0 * fraction << "%";
  return out.str();
}

void print_table(const std::vector<Row>& rows) {
  std::cout << std::left << std::setw(12) << "model" << std::setw(30) << "plan" << std::right << std::setw(13) << "measured ms"
            << std::setw(12) << "tasks ms" << std::setw(12) << "waiting ms" << std::setw(14) << "simulated ms" << std::setw(13)
            << "sim wait ms" << std::setw(9) << "error" << std::setw(18) << "error range" << std::setw(10) << "no drift" << std::setw(16)
            << "measured 1st ms" << std::setw(9) << "error" << std::setw(18) << "error range" << std::setw(10) << "no drift"
            << std::setw(12) << "drawn 1st" << std::setw(13) << "roofline ms" << std::setw(9) << "error" << std::setw(10) << "bwd/fwd"
            << "\n";
  for (const Row& r : rows) {
    const auto figure = [&](auto field) { return median(r.runs, field); };
    const auto range = [&](auto error) {
      double lowest = error(r.runs.front()), highest = lowest;
      for (const Run& run : r.runs) {
        lowest = std::min(lowest, error(run));
        highest = std::max(highest, error(run));
      }
      return percent(lowest) + " .. " + percent(highest);
    };
    std::cout << std::left << std::setw(12) << r.model << std::setw(30) << r.plan << std::right << std::fixed << std::setprecision(3)
              << std::setw(13) << figure([](const Run& x) { return x.measured; }) * 1e3 << std::setw(12)
              << figure([](const Run& x) { return x.tasks; }) * 1e3 << std::setw(12) << figure([](const Run& x) { return x.waiting; }) * 1e3
              << std::setw(14) << figure([](const Run& x) { return x.simulated; }) * 1e3 << std::setw(13)
              << figure([](const Run& x) { return x.simulated_waiting; }) * 1e3 << std::setw(9)
              << percent(figure([](const Run& x) { return x.error(); })) << std::setw(18) << range([](const Run& x) { return x.error(); })
              << std::setw(10) << percent(figure([](const Run& x) { return x.level_error(); })) << std::setw(16)
              << figure([](const Run& x) { return x.automatic; }) * 1e3 << std::setw(9)
              << percent(figure([](const Run& x) { return x.automatic_error(); })) << std::setw(18)
              << range([](const Run& x) { return x.automatic_error(); }) << std::setw(10)
              << percent(figure([](const Run& x) { return x.automatic_level_error(); })) << std::setw(12)
              << percent(figure([](const Run& x) { return x.drawn_error(); })) << std::setw(13)
              << figure([](const Run& x) { return x.roofline; }) * 1e3 << std::setw(9)
              << percent(figure([](const Run& x) { return x.roofline_error(); })) << std::setw(10) << std::setprecision(2)
              << figure([](const Run& x) { return x.backward_over_forward; });
    if (r.runs.front().compiled) std::cout << "  (" << r.runs.front().compiled << " ops compiled from their specs)";
    if (r.runs.front().interpreted) std::cout << "  (" << r.runs.front().interpreted << " interpreted ops)";
    std::cout << "\n";
  }
  std::cout << "Medians over the runs. tasks: the slowest rank's time per step in operator tasks, in layout\n"
               "changes outside the transport and in weight updates; waiting: the slowest rank's time in messages\n"
               "and collectives per step; simulated: the cost model over the measured task times, forward and\n"
               "backward, and updates; sim wait: the most time the same simulation leaves a device in use not\n"
               "computing (in messages and collectives, and waiting for them), beside `waiting`; measured 1st: the\n"
               "cost model measuring each operator task alone first, as `loom optimize` does, on inputs drawn from\n"
               "the values the model's operators read in one forward pass; no drift: the error of the simulation\n"
               "before it with the devices kept level where they meet (the machine's drift left out); drawn 1st:\n"
               "the error of measuring first on inputs drawn uniformly in [-1, 1]; roofline: the cost model\n"
               "alone; error: against measured, per run (the range: the lowest and highest run); bwd/fwd:\n"
               "measured backward over forward task time.\n";
}

}  // namespace

int main(int argc, char** argv) {
  runtime::MpiTransport transport(&argc, &argv);
  const bool printer = transport.rank() == 0;
  try {
    const Settings s = parse(argc, argv);
    if (s.help) {
      if (printer) std::cout << kUsage;
      return 0;
    }
    const search::Machine machine = search::load_machine(s.machine).with_nodes(1).with_devices_per_node(transport.size());
    search::ProfileDatabase database;
    runtime::LocalTaskMeasurer drawing(library());
    std::map<std::string, std::unique_ptr<runtime::LocalTaskMeasurer>> measurers;  // per model, on its run's values
    std::vector<Row> rows;                                                         // each model's plans
    for (const Case& c : cases()) {
      if (!s.models.empty() && std::find(s.models.begin(), s.models.end(), c.name) == s.models.end()) continue;
      models::ModelRequest request;
      request.model = c.model;
      request.params = c.sizes;
      const pcg::Graph graph = models::load_model(library(), request).graph;
      runtime::TaskMeasurementSettings on_run_values;
      on_run_values.run_values =
          std::make_shared<const runtime::RunValues>(runtime::sample_run_values(library(), graph, runtime::TrainSettings{}.seed).values);
      measurers[c.name] = std::make_unique<runtime::LocalTaskMeasurer>(library(), on_run_values);
      const search::CostModel roofline(library(), machine);
      const pcg::Graph data_parallel =
          search::materialize(graph, search::data_parallel(library(), graph, machine), library(), roofline.moves());
      search::OptimizeSettings optimize;
      optimize.pipeline = false;  // the pipeline below is measured on its own
      optimize.mcmc_iterations = 100;
      const search::OptimizeReport searched = search::optimize(library(), graph, rules(), roofline, optimize);
      rows.push_back({c.name, "data parallel", data_parallel, {}, {}});
      rows.push_back({c.name, "searched (" + searched.chosen + ")", searched.plan, {}, {}});
      // A stage per rank, two micro-batches per stage, 1F1B: where the batch divides.
      const int stages = transport.size();
      const search::Pipeline pipeline{stages, 2 * stages, search::PipelineOrder::OneFOneB};
      if (stages > 1) try {
          const pcg::Graph pipelined = search::materialize(
              graph, search::pipeline_placements(library(), graph, search::balanced_stages(graph, roofline, stages), stages, stages),
              library(), roofline.moves());
          search::micro_batch_graph(pipelined, library(), pipeline.microbatches);
          rows.push_back({c.name, "1F1B, " + std::to_string(pipeline.microbatches) + " micro-batches", pipelined, {}, pipeline});
        } catch (const LoomError& e) {
          if (printer) std::cerr << c.name << ": no pipeline (" << e.what() << ")\n";
        }
    }
    // The plans take turns, so that a spell in which the host is slower falls on all of them.
    // Each round measures the tasks alone anew, each at the first plan that costs it, just after
    // that plan's run, so that a run and the figures it is compared with come from one spell.
    // Each model's tasks are measured on its own run's values, in a database of its own; the
    // two measurements take turns at going first.
    std::map<std::string, search::ProfileDatabase> measured_first;
    search::ProfileDatabase measured_drawn;
    for (int round = 1; round <= s.repeats; ++round) {
      measured_first.clear();
      measured_drawn = search::ProfileDatabase();
      const search::CostModel measuring_drawn(library(), machine, std::make_shared<search::MeasuringProfiles>(measured_drawn, drawing));
      std::map<std::string, search::CostModel> measuring_first;
      for (const auto& [model, measurer] : measurers)
        measuring_first.emplace(
            model, search::CostModel(library(), machine, std::make_shared<search::MeasuringProfiles>(measured_first[model], *measurer)));
      for (Row& row : rows)
        row.runs.push_back(run_plan(row.graph, row.pipeline, machine, s, transport, database, measuring_first.at(row.model),
                                    measuring_drawn, round % 2 == 0));
      if (printer) std::cerr << "round " << round << " of " << s.repeats << ": done\n";
    }
    if (!printer) return 0;
    if (!s.profile_out.empty()) database.save(s.profile_out);
    if (!s.measured_out.empty())
      for (const auto& [model, measured] : measured_first) measured.save(s.measured_out + "." + model + ".json");
    if (!s.trace_out.empty())
      for (const Row& row : rows) {
        const std::string plan = row.pipeline.runs_micro_batches() ? "1f1b" : row.plan == "data parallel" ? "dp" : "searched";
        const std::string prefix = s.trace_out + "." + row.model + "." + plan;
        search::write_trace(prefix + ".measured.json", row.runs.back().measured_trace, row.model + ", " + row.plan + ": a measured step",
                            "process");
        search::write_trace(prefix + ".simulated.json", row.runs.back().automatic_trace,
                            row.model + ", " + row.plan + ": simulated over the tasks measured alone first");
      }
    std::cout << "Simulator accuracy on " << machine.name << ", " << transport.size() << " ranks, " << s.repeats
              << " runs of each plan, each the mean of " << s.steps << " steps after a warm-up step (float, SGD, MSE loss)\n";
    print_table(rows);
  } catch (const LoomError& e) {
    std::cerr << "rank " << transport.rank() << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
