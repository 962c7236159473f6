// Substitution generation figures: for each configuration, graphs enumerated, candidates before
// and after pruning, rules per category, wall time and peak memory. Each configuration runs in
// its own process so that its peak memory is its own.
//
//   loom_superopt_bench [--jobs N] [--quick | --full]
//     default: the Unity op set at 3 operators (with and without --prune-implied) and TASO's op
//              set; --quick: 2-operator versions only; --full: also the Unity op set at 4 and TASO's at 3.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/superopt/generator.hpp"

namespace {

using loom::superopt::GeneratorOptions;

struct Config {
  std::string name;
  GeneratorOptions options;
};

// TASO's operator set (its generator's ops, with its constant operators) by this library's names.
std::vector<std::string> taso_ops() {
  return {"matmul", "conv2d", "pool2d_avg", "pool2d_max", "relu",        "sigmoid",    "tanh",      "ewadd",    "ewmul",
          "concat", "split",  "transpose",  "enlarge",    "const_iconv", "const_pool", "const_imm", "const_one"};
}

GeneratorOptions unity(int max_ops, bool implied, int jobs) {
  GeneratorOptions o;
  o.ops = loom::superopt::unity_ops();
  o.parallel = loom::superopt::unity_parallel_forms();
  o.max_ops = max_ops;
  o.prune_implied = implied;
  o.jobs = jobs;
  return o;
}

GeneratorOptions taso(int max_ops, bool parallel, int jobs, bool implied = false) {
  GeneratorOptions o;
  o.ops = taso_ops();
  if (parallel) o.parallel = loom::superopt::unity_parallel_forms();
  o.max_ops = max_ops;
  o.jobs = jobs;
  o.prune_implied = implied;
  // An NCHW activation, a 3x3 kernel and two matrices; like TASO's generator, unit strides, 1x1
  // and 3x3 windows, paddings 0 and 1, no activation or relu.
  o.inputs = loom::superopt::parse_inputs("x: [1, 4, 6, 6], k: [4, 4, 3, 3], a: [4, 6], b: [6, 4]");
  for (const char* stride : {"stride", "stride_h", "stride_w"}) o.attr_domains[stride] = {1};
  for (const char* pad : {"pad", "pad_h", "pad_w"}) o.attr_domains[pad] = {0, 1};
  for (const char* window : {"kh", "kw"}) o.attr_domains[window] = {1, 3};
  o.attr_domains["act"] = {0, 1};
  o.check_max_dim = 5;  // 4-D convolutions at random sizes up to 8 dominate the time otherwise
  return o;
}

// The attention operators BERT-style models run, with the elementwise and layout operators around
// them: one activation, two projection weights and a layer norm's parameters.
GeneratorOptions attention(int max_ops, int jobs) {
  GeneratorOptions o;
  o.ops = {"head_proj_nobias", "attention_scores", "softmax", "batch_matmul", "ewadd", "ewmul", "concat", "split", "gelu", "layer_norm"};
  o.max_ops = max_ops;
  o.jobs = jobs;
  o.prune_implied = true;
  o.inputs = loom::superopt::parse_inputs("x: [2, 4, 6], w: [2, 6, 3], v: [2, 6, 3], g: [6], c: [6]");
  return o;
}

// Runs one configuration in a child process; returns its summary.
nlohmann::json run(const loom::spec::Library& library, const Config& config) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    std::string out;
    try {
      out = loom::superopt::generate(library, config.options).summary.dump();
    } catch (const std::exception& e) {
      out = nlohmann::json{{"error", e.what()}}.dump();
    }
    const char* p = out.data();
    std::size_t left = out.size();
    while (left > 0) {
      const ssize_t n = write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (text.empty()) return {{"error", "the child process ended without a summary"}};
  return nlohmann::json::parse(text);
}

}  // namespace

int main(int argc, char** argv) {
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool quick = false, full = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick")
      quick = true;
    else if (arg == "--full")
      full = true;
    else if (arg == "--jobs" && i + 1 < argc)
      jobs = std::max(1, std::atoi(argv[++i]));
    else {
      std::cerr << "usage: loom_superopt_bench [--jobs N] [--quick | --full]\n";
      return 2;
    }
  }
  const auto library = loom::spec::Library::load({loom::spec::Library::default_specs_dir()});
  std::vector<Config> configs;
  const int n = quick ? 2 : 3;
  configs.push_back({"unity, " + std::to_string(n) + " ops", unity(n, false, jobs)});
  configs.push_back({"unity, " + std::to_string(n) + " ops, implied pruned", unity(n, true, jobs)});
  if (full) configs.push_back({"unity, 4 ops, implied pruned", unity(4, true, jobs)});
  configs.push_back({"taso, 2 ops, algebraic", taso(2, false, jobs)});
  if (!quick) configs.push_back({"taso, 2 ops, with parallel forms", taso(2, true, jobs)});
  if (full) configs.push_back({"taso, 3 ops, implied pruned", taso(3, false, jobs, true)});
  configs.push_back({"attention, " + std::to_string(n) + " ops, implied pruned", attention(n, jobs)});

  std::printf("%-36s %10s %10s %10s %8s %8s %8s %8s %9s %9s  %s\n", "configuration", "graphs", "candidates", "pruned to", "rules",
              "algebr.", "parallel", "hybrid", "seconds", "peak MiB", "stages (share)");
  for (const auto& c : configs) {
    const nlohmann::json s = run(library, c);
    if (s.contains("error")) {
      std::printf("%-36s failed: %s\n", c.name.c_str(), s["error"].get<std::string>().c_str());
      continue;
    }
    std::string stages;
    for (const auto& [stage, seconds] : s["stage_seconds"].items())
      stages += (stages.empty() ? "" : ", ") + stage + " " +
                std::to_string(static_cast<int>(100 * seconds.get<double>() / s["seconds"].get<double>() + 0.5)) + "%";
    std::printf("%-36s %10zu %10zu %10zu %8zu %8zu %8zu %8zu %9.1f %9.0f  %s\n", c.name.c_str(), s["graphs"].get<std::size_t>(),
                s["candidates"].get<std::size_t>(), s["after_pruning"].get<std::size_t>(), s["rules"].get<std::size_t>(),
                s["by_category"]["algebraic"].get<std::size_t>(), s["by_category"]["parallel"].get<std::size_t>(),
                s["by_category"]["hybrid"].get<std::size_t>(), s["seconds"].get<double>(), s["peak_memory_mib"].get<double>(),
                stages.c_str());
    std::fflush(stdout);
  }
  std::printf("(%d worker threads; time and memory of generation, rule library in memory, files not written)\n", jobs);
  return 0;
}
