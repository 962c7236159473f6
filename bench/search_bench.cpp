// Search benchmarks of `loom optimize` (Unity section 8): search time on ResNeXt-50 with the
// split and the cache on and off, Inception-v3 on 192 simulated GPUs, and the speedup of the plan
// found over each baseline for Unity's seven models. Batches grow with the device count (each
// model's default batch per device), as in Unity's evaluation.
//
// Figure 1 (joint against sequential on Unity's MNIST MLP, 2 devices) reports bytes moved.
//
//   loom_search_bench [times|inception|quality|figure1|all] [--nodes 1,2,4,8,16] [--models a,b]
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "bench_support.hpp"
#include "loom/models/registry.hpp"
#include "loom/search/optimizer.hpp"
#include "loom/search/task_graph.hpp"

namespace {

using namespace loom;

using bench::library;
const std::vector<pcg::Rule>& rules() { return bench::unity_rules(); }

pcg::Graph model(const std::string& name, int devices) {
  const models::ModelInfo* info = models::find_model(name);
  models::ParamValues values;
  for (const auto& p : info->params)
    if (p.name == "batch") values["batch"] = p.default_value * devices;
  return models::build_model(library(), name, values);
}

search::Machine summit(int nodes) { return search::load_machine("summit").with_nodes(nodes); }

std::string duration(double s) {
  std::ostringstream os;
  if (s >= 60)
    os << static_cast<int>(s / 60) << " m " << static_cast<int>(std::fmod(s, 60)) << " s";
  else
    os << std::fixed << std::setprecision(s < 1 ? 3 : 1) << s << " s";
  return os.str();
}

double search_time(const std::string& name, int nodes, bool split, bool cache) {
  const search::Machine m = summit(nodes);
  const search::CostModel cost(library(), m);
  search::OptimizeSettings settings;
  settings.joint.split = split;
  settings.joint.mapping.share_cache = cache;
  settings.baselines = false;
  settings.mcmc_iterations = 0;
  const pcg::Graph g = model(name, m.devices());
  return search::optimize(library(), g, rules(), cost, settings).search_seconds;
}

void times() {
  std::cout << "Search time, ResNeXt-50 on Summit nodes (6 V100 each); Unity's table 2 (all on) beside\n";
  std::cout << "GPUs  all on      no split    no split, no cache   Unity (all on)\n";
  const char* unity[] = {"57 s", "1 m 47 s", "3 m", "5 m 55 s"};
  int row = 0;
  for (int nodes : {1, 2, 4, 8}) {
    std::cout << std::setw(4) << nodes * 6 << "  " << std::setw(10) << duration(search_time("resnext50", nodes, true, true)) << "  "
              << std::setw(10) << duration(search_time("resnext50", nodes, false, true)) << "  " << std::setw(19)
              << duration(search_time("resnext50", nodes, false, false)) << "  " << unity[row++] << "\n"
              << std::flush;
  }
}

void inception() {
  std::cout << "Inception-v3 on 192 simulated GPUs (32 Summit nodes): search " << duration(search_time("inception_v3", 32, true, true))
            << " (Unity: under 20 minutes)\n";
}

void quality(const std::vector<int>& node_counts, const std::vector<std::string>& names) {
  std::cout << "Plan quality on Summit: simulated iteration time of the plan found and its speedup over each baseline\n";
  std::cout << std::left << std::setw(14) << "model" << std::right << std::setw(6) << "GPUs" << std::setw(12) << "best (ms)"
            << std::setw(10) << "data par" << std::setw(10) << "expert" << std::setw(10) << "flexflow" << std::setw(12) << "sequential"
            << std::setw(10) << "search"
            << "  chosen\n";
  for (const auto& name : names) {
    for (int nodes : node_counts) {
      const search::Machine m = summit(nodes);
      const search::CostModel cost(library(), m);
      const pcg::Graph g = model(name, m.devices());
      search::OptimizeSettings settings;
      const search::OptimizeReport r = search::optimize(library(), g, rules(), cost, settings);
      std::cout << std::left << std::setw(14) << name << std::right << std::setw(6) << m.devices() << std::setw(12) << std::fixed
                << std::setprecision(2) << r.best_seconds * 1e3;
      for (const char* b : {"data_parallel", "expert", "flexflow_mcmc", "sequential"}) {
        const double s = r.baselines.at(b);
        std::ostringstream cell;
        if (std::isfinite(s))
          cell << std::fixed << std::setprecision(2) << s / r.best_seconds << "x";
        else
          cell << "OOM";
        std::cout << std::setw(std::string(b) == "sequential" ? 12 : 10) << cell.str();
      }
      std::cout << std::setw(10) << duration(r.total_seconds) << "  " << r.chosen << "\n" << std::flush;
    }
  }
}

// Unity figure 1 on two devices slow enough next to their link that using both pays (on V100s
// one device runs this small model fastest). Bytes are in elements d of 4 bytes.
void figure1() {
  search::Machine m = search::load_machine("summit").with_devices_per_node(2);
  m.device.peak_flops = 0.5e12;
  const search::CostModel cost(library(), m);
  const pcg::Graph g = models::build_model(library(), "mlp_fig1");
  auto elements = [&](const pcg::Graph& logical, const std::vector<search::Placement>& placements) {
    return search::communication_bytes(search::build_task_graph(search::materialize(logical, placements, library(), cost.moves()), cost)) /
           4;
  };
  auto ops = [](const pcg::Graph& graph) {
    std::string out;
    for (const pcg::Node& n : graph.nodes())
      if (!n.is_graph_input()) out += (out.empty() ? "" : " ") + n.op;
    return out;
  };
  const search::SequentialResult seq = search::sequential_optimization(library(), g, rules(), cost);
  std::cout << "Unity figure 1 (b=64, ci=784, h=512, co=10) on 2 devices\n"
            << "  sequential (" << ops(seq.graph) << "), data parallel: " << std::fixed << std::setprecision(0)
            << elements(seq.graph, search::data_parallel(library(), seq.graph, m)) << " d bytes"
            << " (Unity: 813,056 d)\n";
  search::JointOptions figure_splits;
  figure_splits.mapping.admit = [](const pcg::Node&, const search::ParallelConfig& c) {
    for (std::size_t d = 1; d < c.outputs[0].D.size(); ++d)
      if (c.outputs[0].D[d] > 1) return false;
    return true;
  };
  const search::JointResult joint = search::joint_search(library(), g, rules(), cost, figure_splits);
  std::cout << "  joint, batch and reduction splits (" << ops(joint.graph) << "): " << elements(joint.graph, joint.placements)
            << " d bytes (Unity: 131,072 d)\n";
  const search::JointResult unrestricted = search::joint_search(library(), g, rules(), cost);
  std::cout << "  joint, every split (" << ops(unrestricted.graph) << "): " << elements(unrestricted.graph, unrestricted.placements)
            << " d bytes\n";
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string what = argc > 1 ? argv[1] : "all";
  std::vector<int> nodes = {1, 2, 4, 8, 16};
  std::vector<std::string> names = {"dlrm", "candle_uno", "mlp", "xdl", "inception_v3", "resnext50", "bert_large"};
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--nodes") {
      nodes.clear();
      for (const auto& n : split_list(argv[i + 1])) nodes.push_back(std::stoi(n));
    } else if (flag == "--models") {
      names = split_list(argv[i + 1]);
    } else {
      std::cerr << "unknown option " << flag << "\n";
      return 2;
    }
  }
  try {
    if (what == "times" || what == "all") times();
    if (what == "inception" || what == "all") inception();
    if (what == "figure1" || what == "all") figure1();
    if (what == "quality" || what == "all") quality(nodes, names);
  } catch (const std::exception& e) {
    std::cerr << "loom_search_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
