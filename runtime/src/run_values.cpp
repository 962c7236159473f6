#include "loom/runtime/run_values.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>

#include "loom/runtime/data.hpp"
#include "loom/runtime/forward_pass.hpp"
#include "loom/runtime/model_values.hpp"

namespace loom::runtime {

void RunValues::add(const std::string& op, const pcg::AttrMap& attrs, std::size_t input, const std::vector<float>& values) {
  if (values.empty()) return;
  std::vector<Pool>& inputs = samples_[{op, attrs}];
  if (inputs.size() <= input) inputs.resize(input + 1);
  Pool& pool = inputs[input];
  // Every operator keeps an equal share, drawn at random: a stride could fall in step with a
  // row's length and sample a few columns only.
  const std::size_t share = kMaxSample / (pool.each.size() + 1);
  const auto drawn = [&](const std::vector<float>& from) {
    std::vector<float> kept;
    kept.reserve(std::min(share, from.size()));
    std::sample(from.begin(), from.end(), std::back_inserter(kept), share, rng_);
    return kept;
  };
  pool.each.push_back(drawn(values));
  pool.all.clear();
  for (std::vector<float>& one : pool.each) {
    if (one.size() > share) one = drawn(one);
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
                                  const NamedTensors<double>& model_values, bool compile_from_specs) {
  const auto start = std::chrono::steady_clock::now();
  // Every port an operator reads becomes an output, so that the pass gives each one whole.
  pcg::Graph graph = model;
  std::map<pcg::PortRef, std::size_t> output_of;
  for (std::size_t i = 0; i < graph.outputs().size(); ++i) output_of.emplace(graph.outputs()[i], i);
  for (const pcg::Node& n : graph.nodes())
    for (pcg::PortRef in : n.inputs)
      if (output_of.emplace(in, graph.outputs().size()).second) graph.mark_output(in);
  ForwardSettings settings;
  settings.seed = seed;
  settings.model_values = model_values;
  settings.compile_from_specs = compile_from_specs;
  // As in training: the batch feeds the inputs the model gives no value of its own.
  settings.inputs = synthetic_data(library, model, LossKind::MeanSquaredError, seed, 1)->batch(0).inputs;
  for (const auto& [name, value] : model_values_of(model, model_values, pcg::kInputOp)) settings.inputs.erase(name);
  const ForwardReport<float> pass = forward_pass<float>(library, graph, settings);
  RunValuesReport report;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.is_graph_input()) continue;
    for (std::size_t i = 0; i < n.inputs.size(); ++i) report.values.add(n.op, n.attrs, i, pass.outputs.at(output_of.at(n.inputs[i])).data);
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace loom::runtime
