#include "loom/runtime/run_values.hpp"

#include <algorithm>
#include <chrono>

#include "loom/runtime/data.hpp"
#include "loom/runtime/forward_pass.hpp"

namespace loom::runtime {

namespace {

// At most `n` of `values`, evenly spread over them.
std::vector<float> thinned(const std::vector<float>& values, std::size_t n) {
  if (values.size() <= n) return values;
  std::vector<float> kept(n);
  for (std::size_t i = 0; i < n; ++i) kept[i] = values[i * values.size() / n];
  return kept;
}

}  // namespace

void RunValues::add(const std::string& op, const pcg::AttrMap& attrs, std::size_t input, const std::vector<float>& values) {
  if (values.empty()) return;
  std::vector<Pool>& inputs = samples_[{op, attrs}];
  if (inputs.size() <= input) inputs.resize(input + 1);
  Pool& pool = inputs[input];
  // Every operator keeps an equal share.
  const std::size_t share = kMaxSample / (pool.each.size() + 1);
  pool.each.push_back(thinned(values, share));
  pool.all.clear();
  for (std::vector<float>& one : pool.each) {
    if (one.size() > share) one = thinned(one, share);
    pool.all.insert(pool.all.end(), one.begin(), one.end());
  }
}

const std::vector<float>* RunValues::sample(const std::string& op, const pcg::AttrMap& attrs, std::size_t input) const {
  auto found = samples_.find({op, attrs});
  if (found == samples_.end() || found->second.size() <= input || found->second[input].all.empty()) return nullptr;
  return &found->second[input].all;
}

std::size_t RunValues::size() const {
  std::size_t n = 0;
  for (const auto& [op, inputs] : samples_)
    for (const Pool& pool : inputs) n += pool.all.empty() ? 0 : 1;
  return n;
}

RunValuesReport sample_run_values(const spec::Library& library, const pcg::Graph& model, std::uint64_t seed,
                                  const NamedTensors<double>& model_values) {
  const auto start = std::chrono::steady_clock::now();
  // Every port an operator reads becomes an output, so that the pass gives each one whole.
  pcg::Graph graph = model;
  std::vector<pcg::PortRef> read;
  for (const pcg::Node& n : graph.nodes())
    for (pcg::PortRef in : n.inputs)
      if (std::find(read.begin(), read.end(), in) == read.end()) read.push_back(in);
  for (pcg::PortRef port : read)
    if (std::find(graph.outputs().begin(), graph.outputs().end(), port) == graph.outputs().end()) graph.mark_output(port);
  ForwardSettings settings;
  settings.seed = seed;
  settings.model_values = model_values;
  settings.inputs = synthetic_data(library, model, LossKind::MeanSquaredError, seed, 1)->batch(0).inputs;
  const ForwardReport<float> pass = forward_pass<float>(library, graph, settings);
  RunValuesReport report;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.is_graph_input()) continue;
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const auto at = std::find(graph.outputs().begin(), graph.outputs().end(), n.inputs[i]);
      report.values.add(n.op, n.attrs, i, pass.outputs.at(static_cast<std::size_t>(at - graph.outputs().begin())).data);
    }
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace loom::runtime
