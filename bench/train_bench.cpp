// Training-step time of an MLP of 4 dense layers of 1024 (matmul + ReLU), batch 256, float, one
// process, SGD with softmax cross-entropy: the CPU figure of the runtime.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <vector>

#include <Eigen/Core>

#include "loom/interpreter/library.hpp"
#include "loom/runtime/trainer.hpp"

int main() {
  using namespace loom;
  const std::int64_t batch = 256, width = 1024, layers = 4, steps = 12, warmup = 2;
  const spec::Library library = spec::Library::load({spec::Library::default_specs_dir()});
  pcg::Graph g;
  pcg::PortRef h{g.add_input("x", pcg::ParallelShape::unpartitioned({batch, width})), 0};
  for (std::int64_t l = 0; l < layers; ++l) {
    const std::string name = "fc" + std::to_string(l + 1);
    const int w = g.add_input(name + ".weight", pcg::ParallelShape::unpartitioned({width, width}), true);
    h = {g.add_node(library, "matmul", {}, {h, {w, 0}}, name), 0};
    if (l + 1 < layers) h = {g.add_node(library, "relu", {}, {h}, name + ".relu"), 0};
  }
  g.mark_output(h);

  runtime::TrainSettings settings;
  settings.steps = steps;
  std::vector<double> seconds;
  runtime::train<float>(library, g, settings, [&](const runtime::StepReport& r) { seconds.push_back(r.seconds); });
  std::vector<double> measured(seconds.begin() + warmup, seconds.end());
  std::sort(measured.begin(), measured.end());
  const double median = measured[measured.size() / 2];
  const double flops = 3.0 * 2.0 * static_cast<double>(batch * width * width * layers);  // forward + backward
  std::cout << "MLP " << layers << " x " << width << ", batch " << batch << ", float, one process (" << Eigen::nbThreads()
            << " Eigen threads)\n"
            << std::fixed << std::setprecision(2) << "  training step: " << median * 1e3 << " ms (median of " << measured.size()
            << " steps after " << warmup << " warm-up)\n"
            << std::setprecision(0) << "  throughput:    " << static_cast<double>(batch) / median << " samples/s, " << std::setprecision(1)
            << flops / median * 1e-9 << " GFLOP/s\n";
  return 0;
}
