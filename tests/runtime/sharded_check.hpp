#pragma once
// Checks that a plan run task by task gives the values and gradients of the model run whole.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "loom/interpreter/library.hpp"
#include "loom/models/registry.hpp"
#include "loom/models/values.hpp"
#include "loom/runtime/sharded_executor.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/materialize.hpp"
#include "loom/search/parallel_config.hpp"

namespace loom::runtime::sharded_test {

inline const spec::Library& library() {
  static spec::Library lib = spec::Library::load({spec::Library::default_specs_dir()});
  return lib;
}

inline std::set<std::string> weights_of(const pcg::Graph& g) {
  std::set<std::string> out;
  for (const pcg::Node& n : g.nodes())
    if (n.op == pcg::kWeightOp) out.insert(n.name);
  return out;
}

// Each operator split as one of its spec's configurations, chosen at random, on an aligned block
// of `devices` devices.
inline std::vector<search::Placement> random_placements(const pcg::Graph& g, int devices, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<search::Placement> out = search::unsplit_placements(g);
  for (const pcg::Node& n : g.nodes()) {
    if (!search::is_compute_node(library(), n)) continue;
    std::vector<search::ParallelConfig> configs = search::node_configs(library(), g, n, {2, 4});
    std::erase_if(configs, [&](const search::ParallelConfig& c) { return c.tasks() > devices; });
    const auto& c = configs[rng() % configs.size()];
    const int blocks = devices / static_cast<int>(c.tasks());
    out[static_cast<std::size_t>(n.id)] = {c, static_cast<int>(rng() % static_cast<std::uint64_t>(blocks)) * static_cast<int>(c.tasks())};
  }
  return out;
}

// The plan run task by task gives the outputs and gradients of the model run whole, on one device.
inline void expect_same_as_logical(const pcg::Graph& model, const std::vector<search::Placement>& placements, int devices,
                                   Transport& transport) {
  const pcg::Graph plan = search::materialize(model, placements, library());
  const NamedTensors<double> feeds = models::random_values(model, 11);
  LocalTransport one_process;
  ShardedExecutor<double> logical(library(), model, builtin_kernels(), one_process, weights_of(model), 1);
  logical.forward(feeds);
  ShardedExecutor<double> sharded(library(), plan, builtin_kernels(), transport, weights_of(model), devices);
  sharded.forward(feeds);
  std::vector<Tensor<double>> output_grads;
  for (std::size_t i = 0; i < model.outputs().size(); ++i) {
    const Tensor<double> want = logical.output(i);
    const Tensor<double> got = sharded.output(i);
    ASSERT_EQ(got.dims, want.dims);
    for (std::size_t k = 0; k < want.data.size(); ++k) ASSERT_NEAR(got.data[k], want.data[k], 1e-9 * (1 + std::abs(want.data[k])));
    Tensor<double> g = want;
    for (std::size_t k = 0; k < g.data.size(); ++k) g.data[k] = std::sin(static_cast<double>(k));
    output_grads.push_back(std::move(g));
  }
  const NamedTensors<double> want = logical.backward(output_grads);
  NamedTensors<double> got = sharded.backward(output_grads);
  sharded.assemble(got);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    const Tensor<double>& g = got.at(name);
    ASSERT_EQ(g.dims, w.dims) << name;
    for (std::size_t k = 0; k < w.data.size(); ++k) ASSERT_NEAR(g.data[k], w.data[k], 1e-9 * (1 + std::abs(w.data[k]))) << name << "[" << k << "]";
  }
}

inline pcg::Graph small_mlp() { return models::build_model(library(), "mlp_fig1", {{"batch", 8}, {"in", 16}, {"hidden", 32}, {"out", 4}}); }

inline pcg::Graph small_transformer() {
  return models::build_model(library(), "bert_large",
                             {{"batch", 2}, {"seq", 4}, {"layers", 1}, {"hidden", 8}, {"heads", 2}, {"vocab", 16}, {"max_positions", 4}});
}

}  // namespace loom::runtime::sharded_test
