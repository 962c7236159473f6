// How close the simulator's iteration time is to a real run on this host. For small instances of
// four zoo models, under data parallelism and under the plan `search::optimize` finds for the
// cpu_host machine with one device per rank, one training run of a warm-up step and N timed steps:
//   (a) per operator the kernel time per task over the timed steps, every rank's tasks together,
//       becomes a profile database entry (with the roofline figure for the same task);
//   (b) the plan simulated with the cost model over that database (and, for comparison, over the
//       roofline alone);
//   (c) the real iteration (forward, loss, backward, optimizer step): the mean of the timed steps,
//       the slowest rank's.
// The kernel times and the iteration come from the same steps, so a host that is slower for a
// while moves both. Prints one row per model and plan; rank 0 prints.
//
//   mpirun --oversubscribe -np 2 loom_sim_accuracy_bench [--steps N] [--machine NAME|PATH]
//                                                        [--models a,b] [--profile-out FILE]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "loom/models/registry.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/mpi_transport.hpp"
#include "loom/runtime/operator_profile.hpp"
#include "loom/runtime/trainer.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/optimizer.hpp"
#include "loom/search/simulator.hpp"
#include "loom/search/task_graph.hpp"
#include "bench_support.hpp"

namespace {

using namespace loom;

using bench::library;
const std::vector<pcg::Rule>& rules() { return bench::unity_rules(); }

struct Case {
  std::string model;
  models::ParamValues sizes;
};

// Small enough for a few steps on two cores, large enough that kernels take measurable time.
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"mlp_fig1", {{"batch", 64}, {"in", 256}, {"hidden", 512}, {"out", 16}}},
      {"bert_large", {{"batch", 4}, {"seq", 32}, {"layers", 1}, {"hidden", 64}, {"heads", 4}, {"vocab", 128}, {"max_positions", 32}}},
      {"alexnet", {{"batch", 8}, {"image", 63}, {"classes", 10}, {"width_div", 8}}},
      {"dlrm", {{"batch", 64}, {"dim", 16}, {"tables", 4}, {"rows", 1000}}},
  };
  return all;
}

struct Settings {
  std::int64_t steps = 30;
  std::string machine = "cpu_host";
  std::vector<std::string> models;  // empty: all
  std::string profile_out;
};

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
    if (i + 1 >= argc) throw LoomError("option " + arg + " needs a value");
    const std::string value = argv[++i];
    if (arg == "--steps") s.steps = std::stoll(value);
    else if (arg == "--machine") s.machine = value;
    else if (arg == "--models") s.models = split_list(value);
    else if (arg == "--profile-out") s.profile_out = value;
    else throw LoomError("unknown option " + arg + " (expected --steps, --machine, --models or --profile-out)");
  }
  if (s.steps < 1) throw LoomError("--steps must be at least 1");
  return s;
}

// Every rank's kernel times added up, so each rank sees the time of every task of the plan.
std::vector<runtime::OperatorTime> summed_over_ranks(const std::vector<runtime::OperatorTime>& times, runtime::Transport& transport) {
  std::vector<double> flat;
  for (const auto& t : times) {
    flat.insert(flat.end(),
                {t.forward_seconds, t.backward_seconds, static_cast<double>(t.forward_tasks), static_cast<double>(t.backward_tasks)});
  }
  transport.sum(flat);
  std::vector<runtime::OperatorTime> out(times.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = {flat[4 * i], flat[4 * i + 1], std::llround(flat[4 * i + 2]), std::llround(flat[4 * i + 3])};
  }
  return out;
}

double max_over_ranks(double value, runtime::Transport& transport) {
  std::vector<double> all(static_cast<std::size_t>(transport.size()), 0.0);
  all[static_cast<std::size_t>(transport.rank())] = value;
  transport.sum(all);
  return *std::max_element(all.begin(), all.end());
}

// The transport of the run, timing every call: how long this process waits on messages and
// collectives (the other ranks' work included, as a real run waits for it).
class TimedTransport final : public runtime::Transport {
 public:
  explicit TimedTransport(runtime::Transport& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  void exchange(std::vector<runtime::Outgoing<float>>& s, std::vector<runtime::Incoming<float>>& r) override { timed([&] { inner_.exchange(s, r); }); }
  void exchange(std::vector<runtime::Outgoing<double>>& s, std::vector<runtime::Incoming<double>>& r) override { timed([&] { inner_.exchange(s, r); }); }
  void sum(std::vector<float>& v) override { timed([&] { inner_.sum(v); }); }
  void sum(std::vector<double>& v) override { timed([&] { inner_.sum(v); }); }
  void sum(std::vector<float>& v, const std::vector<int>& g) override { timed([&] { inner_.sum(v, g); }); }
  void sum(std::vector<double>& v, const std::vector<int>& g) override { timed([&] { inner_.sum(v, g); }); }
  void all_gather(std::vector<float>& v, const std::vector<int>& g) override { timed([&] { inner_.all_gather(v, g); }); }
  void all_gather(std::vector<double>& v, const std::vector<int>& g) override { timed([&] { inner_.all_gather(v, g); }); }
  void reduce_scatter(std::vector<float>& v, const std::vector<int>& g) override { timed([&] { inner_.reduce_scatter(v, g); }); }
  void reduce_scatter(std::vector<double>& v, const std::vector<int>& g) override { timed([&] { inner_.reduce_scatter(v, g); }); }

  double seconds = 0;

 private:
  template <class Call>
  void timed(Call&& call) {
    const auto start = std::chrono::steady_clock::now();
    call();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  runtime::Transport& inner_;
};

struct Row {
  std::string model, plan;
  double measured = 0, simulated = 0, roofline = 0;  // seconds per iteration
  double kernels = 0;                // seconds per iteration in the slowest rank's kernels
  double waiting = 0;                // seconds per iteration the slowest rank spent in the transport
  double backward_over_forward = 0;  // of the measured kernel time
  std::size_t interpreted = 0;
};

Row run_plan(const std::string& model, const std::string& plan_name, const pcg::Graph& plan, const search::Machine& machine,
             const Settings& s, runtime::Transport& transport, search::ProfileDatabase& database) {
  runtime::TrainSettings train;
  train.loss = runtime::LossKind::MeanSquaredError;
  train.optimizer.learning_rate = 1e-4;
  train.plan_devices = machine.devices();
  train.warmup_steps = 1;
  train.steps = 1 + s.steps;
  TimedTransport timed(transport);
  double waiting = 0;  // over the timed steps
  const runtime::TrainReport run = runtime::train<float>(
      library(), plan, train,
      [&](const runtime::StepReport& r) {
        if (r.step > train.warmup_steps) waiting += timed.seconds;
        timed.seconds = 0;
      },
      &timed);
  const auto steps = static_cast<double>(run.timed_steps);
  double own_kernel_seconds = 0;
  for (const auto& t : run.operator_times) own_kernel_seconds += t.forward_seconds + t.backward_seconds;
  const std::vector<runtime::OperatorTime> times = summed_over_ranks(run.operator_times, transport);

  search::ProfileDatabase plan_profile;
  const std::vector<runtime::OperatorProfile> profiles = runtime::operator_profiles(library(), plan, machine, times);
  runtime::record_profiles(profiles, plan_profile);
  runtime::record_profiles(profiles, database);
  double forward = 0, backward = 0;
  for (const auto& t : times) {
    forward += t.forward_seconds;
    backward += t.backward_seconds;
  }

  Row row{model, plan_name};
  row.measured = max_over_ranks(run.seconds_per_step, transport);
  row.kernels = max_over_ranks(own_kernel_seconds / steps, transport);
  row.waiting = max_over_ranks(waiting / steps, transport);
  row.simulated = search::simulate(search::build_task_graph(plan, search::CostModel(library(), machine, &plan_profile))).makespan;
  row.roofline = search::simulate(search::build_task_graph(plan, search::CostModel(library(), machine))).makespan;
  row.backward_over_forward = forward > 0 ? backward / forward : 0;
  row.interpreted = run.interpreted_ops.size();
  return row;
}

std::string percent(double simulated, double measured) {
  std::ostringstream out;
  out << std::showpos << std::fixed << std::setprecision(1) << 100.0 * (simulated / measured - 1) << "%";
  return out.str();
}

void print_table(const std::vector<Row>& rows) {
  std::cout << std::left << std::setw(12) << "model" << std::setw(30) << "plan" << std::right << std::setw(13) << "measured ms"
            << std::setw(12) << "kernels ms" << std::setw(12) << "waiting ms" << std::setw(14) << "simulated ms" << std::setw(9) << "error" << std::setw(13)
            << "roofline ms" << std::setw(9) << "error" << std::setw(10) << "bwd/fwd" << "\n";
  for (const Row& r : rows) {
    std::cout << std::left << std::setw(12) << r.model << std::setw(30) << r.plan << std::right << std::fixed << std::setprecision(3)
              << std::setw(13) << r.measured * 1e3 << std::setw(12) << r.kernels * 1e3 << std::setw(12) << r.waiting * 1e3 << std::setw(14) << r.simulated * 1e3
              << std::setw(9) << percent(r.simulated, r.measured) << std::setw(13) << r.roofline * 1e3 << std::setw(9)
              << percent(r.roofline, r.measured) << std::setw(10) << std::setprecision(2) << r.backward_over_forward;
    if (r.interpreted) std::cout << "  (" << r.interpreted << " interpreted ops)";
    std::cout << "\n";
  }
  std::cout << "kernels: the slowest rank's time in operator kernels per step; waiting: the slowest rank's time in\n"
               "messages and collectives per step; simulated: the cost model over the measured\n"
               "operator times, forward and backward; roofline: the cost model alone; error: against measured;\n"
               "bwd/fwd: measured backward over forward kernel time.\n";
}

}  // namespace

int main(int argc, char** argv) {
  runtime::MpiTransport transport(&argc, &argv);
  const bool printer = transport.rank() == 0;
  try {
    const Settings s = parse(argc, argv);
    const search::Machine machine = search::load_machine(s.machine).with_nodes(1).with_devices_per_node(transport.size());
    search::ProfileDatabase database;
    std::vector<Row> rows;
    for (const Case& c : cases()) {
      if (!s.models.empty() && std::find(s.models.begin(), s.models.end(), c.model) == s.models.end()) continue;
      const pcg::Graph graph = models::build_model(library(), c.model, c.sizes);
      const search::CostModel roofline(library(), machine);
      const pcg::Graph data_parallel = search::materialize(graph, search::data_parallel(library(), graph, machine), library());
      search::OptimizeSettings optimize;
      optimize.pipeline = false;  // the trainer runs no pipeline schedule
      optimize.mcmc_iterations = 100;
      const search::OptimizeReport searched = search::optimize(library(), graph, rules(), roofline, optimize);
      for (const auto& [name, plan] : {std::pair<std::string, const pcg::Graph*>{"data parallel", &data_parallel},
                                       {"searched (" + searched.chosen + ")", &searched.plan}}) {
        rows.push_back(run_plan(c.model, name, *plan, machine, s, transport, database));
        if (printer) std::cerr << c.model << ", " << name << ": done\n";
      }
    }
    if (!printer) return 0;
    if (!s.profile_out.empty()) database.save(s.profile_out);
    std::cout << "Simulator accuracy on " << machine.name << ", " << transport.size() << " ranks, the mean of " << s.steps
              << " steps after a warm-up step (float, SGD, MSE loss)\n";
    print_table(rows);
  } catch (const LoomError& e) {
    std::cerr << "rank " << transport.rank() << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
}
