// Operators compiled from their specs against the hand-written Eigen kernels of the same operators
// (float, one process, one thread): forward and backward time per call and their ratio, with the
// build time of each compiled kernel (the cache starts empty). Then the GLU classifier of
// docs/examples/glu.loom trained with its user-written `glu` compiled and interpreted, against the
// same model written with native operators (matmul, sigmoid, ewmul). Prints peak memory. Freed
// memory stays in the process, as in every run of the runtime (runtime::keep_freed_memory).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "loom/interpreter/native_program.hpp"
#include "loom/models/load.hpp"
#include "loom/pcg/median.hpp"
#include "loom/runtime/interpreter_kernel.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "loom/runtime/memory_reuse.hpp"
#include "loom/runtime/trainer.hpp"

namespace {

using namespace loom;
using Clock = std::chrono::steady_clock;

struct Row {
  std::string group, op;
  pcg::AttrMap attrs;
  std::vector<std::vector<std::int64_t>> inputs;
  double target;  // the compiled kernel's goal: at most this many times the native one
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct Timing {
  double forward = 0, backward = 0;
};

// One kernel's calls on fixed inputs and output gradients (all ones).
struct Calls {
  const runtime::Kernel<float>& kernel;
  const runtime::OpCall<float>& call;
  std::vector<runtime::Tensor<float>> outputs, grads;
  std::vector<const runtime::Tensor<float>*> out_ptrs, grad_ptrs;

  Calls(const runtime::Kernel<float>& k, const runtime::OpCall<float>& c) : kernel(k), call(c), outputs(k.forward(c)) {
    for (const auto& o : outputs) grads.emplace_back(o.dims, 1.0f);
    for (std::size_t i = 0; i < outputs.size(); ++i) out_ptrs.push_back(&outputs[i]), grad_ptrs.push_back(&grads[i]);
  }
  double forward() const {
    const auto start = Clock::now();
    kernel.forward(call);
    return seconds_since(start);
  }
  double backward() const {
    const runtime::GradCall<float> g{call, out_ptrs, grad_ptrs, std::vector<bool>(call.inputs.size(), true)};
    const auto start = Clock::now();
    kernel.backward(g);
    return seconds_since(start);
  }
};

// Both kernels' medians, their calls interleaved so that both meet the same allocator and caches.
std::pair<Timing, Timing> time_both(const runtime::Kernel<float>& a, const runtime::Kernel<float>& b, const runtime::OpCall<float>& call,
                                    int reps) {
  const Calls first(a, call), second(b, call);
  std::vector<double> af, ab, bf, bb;
  for (int r = 0; r < reps; ++r) {
    af.push_back(first.forward());
    bf.push_back(second.forward());
    ab.push_back(first.backward());
    bb.push_back(second.backward());
  }
  return {{pcg::median(af), pcg::median(ab)}, {pcg::median(bf), pcg::median(bb)}};
}

std::string shapes_text(const std::vector<std::vector<std::int64_t>>& shapes) {
  std::string text;
  for (const auto& s : shapes) text += (text.empty() ? "" : " ") + spec::dims_to_string(s);
  return text;
}

double step_ms(const spec::Library& library, const pcg::Graph& graph, bool compile, std::int64_t steps) {
  runtime::TrainSettings settings;
  settings.steps = steps;
  settings.compile_from_specs = compile;
  std::vector<double> seconds;
  runtime::train<float>(library, graph, settings, [&](const runtime::StepReport& r) { seconds.push_back(r.seconds); });
  seconds.erase(seconds.begin());  // the first step builds kernels and buffers
  return pcg::median(seconds) * 1e3;
}

// The GLU classifier with native operators only: the same weights, (x w) * sigmoid(x v) per layer.
pcg::Graph unfused_glu(const spec::Library& library, std::int64_t batch, std::int64_t in, std::int64_t hidden, std::int64_t depth,
                       std::int64_t classes) {
  pcg::Graph g;
  pcg::PortRef h{g.add_input("x", pcg::ParallelShape::unpartitioned({batch, in})), 0};
  for (std::int64_t l = 0; l < depth; ++l) {
    const std::string at = std::to_string(l);
    const std::int64_t rows = l == 0 ? in : hidden;
    const int w = g.add_input("w" + at, pcg::ParallelShape::unpartitioned({rows, hidden}), true);
    const int v = g.add_input("v" + at, pcg::ParallelShape::unpartitioned({rows, hidden}), true);
    const pcg::PortRef xw{g.add_node(library, "matmul", {}, {h, {w, 0}}, "xw" + at), 0};
    const pcg::PortRef xv{g.add_node(library, "matmul", {}, {h, {v, 0}}, "xv" + at), 0};
    const pcg::PortRef gate{g.add_node(library, "sigmoid", {}, {xv}, "gate" + at), 0};
    h = {g.add_node(library, "ewmul", {}, {xw, gate}, "glu" + at), 0};
  }
  const int c = g.add_input("classifier", pcg::ParallelShape::unpartitioned({hidden, classes}), true);
  g.mark_output({g.add_node(library, "matmul", {}, {h, {c, 0}}, "logits"), 0});
  return g;
}

std::string peak_memory() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmHWM:", 0) == 0) return line.substr(6);
  return " unknown";
}

}  // namespace

int main() {
  namespace fs = std::filesystem;
  runtime::keep_freed_memory();
  const fs::path cache = fs::temp_directory_path() / ("loom-compiled-bench-" + std::to_string(::getpid()));
  ::setenv("LOOM_KERNEL_CACHE", cache.c_str(), 1);
  const auto& tools = spec::NativeToolchain::from_environment();
  if (tools.compiler.empty()) {
    std::cerr << "compiled kernels bench: " << tools.why_none << "\n";
    return 1;
  }
  const std::string glu_file = std::string(LOOM_EXAMPLES_DIR) + "/glu.loom";
  const spec::Library library = spec::Library::load(models::spec_paths_for({spec::Library::default_specs_dir()}, glu_file + ":glu_mlp"));

  const std::vector<Row> rows = {
      {"elementwise", "relu", {}, {{512, 2048}}, 1.5},
      {"elementwise", "sigmoid", {}, {{512, 2048}}, 1.5},
      {"elementwise", "gelu", {}, {{512, 2048}}, 1.5},
      {"elementwise", "ewadd", {}, {{512, 2048}, {512, 2048}}, 1.5},
      {"elementwise", "ewmul", {}, {{512, 2048}, {512, 2048}}, 1.5},
      {"reduction", "softmax", {}, {{512, 2048}}, 2},
      {"reduction", "layer_norm", {}, {{512, 2048}, {2048}, {2048}}, 2},
      {"contraction", "matmul", {}, {{512, 1024}, {1024, 1024}}, 2},
      {"contraction", "batch_matmul", {}, {{16, 256, 64}, {16, 64, 256}}, 2},
      {"contraction", "linear", {}, {{8, 64, 1024}, {1024, 1024}, {1024}}, 2},
      {"contraction", "attention_scores", {}, {{16, 256, 64}, {16, 256, 64}}, 2},
  };
  std::cout << "Compiled from the spec vs the hand-written kernel, float, one thread (" << tools.compiler << ")\n\n";
  std::cout << std::left << std::setw(12) << "class" << std::setw(18) << "operator" << std::setw(32) << "inputs" << std::right
            << std::setw(10) << "build s" << std::setw(12) << "native fw" << std::setw(12) << "compiled" << std::setw(8) << "ratio"
            << std::setw(12) << "native bw" << std::setw(12) << "compiled" << std::setw(8) << "ratio" << std::setw(8) << "goal"
            << "\n";
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> uniform(-1, 1);
  int missed = 0;
  for (const Row& row : rows) {
    const runtime::Kernel<float>* native = runtime::builtin_kernels().find<float>(row.op, runtime::Backend::Cpu);
    if (!native) {
      std::cerr << row.op << " has no native kernel\n";
      return 1;
    }
    const auto build_start = Clock::now();
    const runtime::Kernel<float> compiled = runtime::interpreter_kernel<float>(library, row.op, row.attrs, row.inputs);
    const double build = seconds_since(build_start);
    if (compiled.route != runtime::KernelRoute::Compiled) {
      std::cerr << row.op << " did not compile\n";
      return 1;
    }
    std::vector<runtime::Tensor<float>> inputs;
    for (const auto& dims : row.inputs) {
      inputs.emplace_back(dims, 0.0f);
      for (float& v : inputs.back().data) v = uniform(rng);
    }
    runtime::OpCall<float> call{row.op, row.attrs, {}, {}, {}, {}, {}};
    for (const auto& t : inputs) call.inputs.push_back(&t);
    for (const auto& shape : library.infer(row.op, row.attrs, [&] {
           std::vector<pcg::ParallelShape> shapes;
           for (const auto& dims : row.inputs) shapes.push_back(pcg::ParallelShape::unpartitioned(dims));
           return shapes;
         }()))
      call.output_dims.push_back(shape.dims);
    const auto [n, c] = time_both(*native, compiled, call, 15);
    const double fw = c.forward / n.forward, bw = c.backward / n.backward;
    missed += fw > row.target || bw > row.target;
    std::cout << std::left << std::setw(12) << row.group << std::setw(18) << row.op << std::setw(32) << shapes_text(row.inputs)
              << std::right << std::fixed << std::setprecision(2) << std::setw(10) << build << std::setprecision(3) << std::setw(10)
              << n.forward * 1e3 << "ms" << std::setw(10) << c.forward * 1e3 << "ms" << std::setprecision(2) << std::setw(7) << fw << "x"
              << std::setprecision(3) << std::setw(10) << n.backward * 1e3 << "ms" << std::setw(10) << c.backward * 1e3 << "ms"
              << std::setprecision(2) << std::setw(7) << bw << "x" << std::setw(7) << row.target << "x\n";
  }
  std::cout << "(medians of 15 calls of each, interleaved; " << missed << " of " << rows.size() << " operators above their goal)\n\n";

  const std::int64_t batch = 32, in = 64, hidden = 128, depth = 2, classes = 10;
  models::ModelRequest request;
  request.model = glu_file + ":glu_mlp";
  const pcg::Graph glu = models::load_model(library, request).graph;
  const pcg::Graph unfused = unfused_glu(library, batch, in, hidden, depth, classes);
  const double native_ms = step_ms(library, unfused, true, 30);
  const double compiled_ms = step_ms(library, glu, true, 30);
  const double interpreted_ms = step_ms(library, glu, false, 4);
  std::cout << "GLU classifier (docs/examples/glu.loom: batch " << batch << ", " << in << " -> " << hidden << " x " << depth << " -> "
            << classes << "), training step, median:\n"
            << std::setprecision(3) << "  native operators (matmul, sigmoid, ewmul): " << native_ms << " ms\n"
            << "  glu compiled from its spec:                " << compiled_ms << " ms (" << std::setprecision(2) << compiled_ms / native_ms
            << "x the native)\n"
            << std::setprecision(3) << "  glu interpreted:                           " << interpreted_ms << " ms (" << std::setprecision(1)
            << interpreted_ms / native_ms << "x)\n";
  std::cout << "peak memory:" << peak_memory() << "\n";
  fs::remove_all(cache);
  return 0;
}
