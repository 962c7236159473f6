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
    out[n.id.index()] = {c, static_cast<int>(rng() % static_cast<std::uint64_t>(blocks)) * static_cast<int>(c.tasks())};
  }
  return out;
}

// The plan run task by task gives the outputs and gradients of the model run whole, on one device.
inline void expect_same_as_logical(const pcg::Graph& model, const pcg::Graph& plan, int devices, Transport& transport) {
  const NamedTensors<double> feeds = models::random_values(library(), model, 11);
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
  NamedValues<double> held = sharded.backward_values(output_grads);
  sharded.assemble(held);
  const NamedTensors<double> got = to_host(held);
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, w] : want) {
    const Tensor<double>& g = got.at(name);
    ASSERT_EQ(g.dims, w.dims) << name;
    for (std::size_t k = 0; k < w.data.size(); ++k)
      ASSERT_NEAR(g.data[k], w.data[k], 1e-9 * (1 + std::abs(w.data[k]))) << name << "[" << k << "]";
  }
}

// The same for the plan `placements` make of the model.
inline void expect_same_as_logical(const pcg::Graph& model, const std::vector<search::Placement>& placements, int devices,
                                   Transport& transport) {
  expect_same_as_logical(model, search::materialize(model, placements, library()), devices, transport);
}

inline pcg::Graph small_mlp() { return models::build_model(library(), "mlp_fig1", {{"batch", 8}, {"in", 16}, {"hidden", 32}, {"out", 4}}); }

inline pcg::Graph small_transformer() {
  return models::build_model(library(), "bert_large",
                             {{"batch", 2}, {"seq", 4}, {"layers", 1}, {"hidden", 8}, {"heads", 2}, {"vocab", 16}, {"max_positions", 4}});
}

// The ids of the plan's nodes running `op`.
inline std::vector<pcg::NodeId> nodes_running(const pcg::Graph& plan, const std::string& op) {
  std::vector<pcg::NodeId> ids;
  for (const pcg::Node& n : plan.nodes())
    if (n.op == op) ids.push_back(n.id);
  return ids;
}

// relu(x · w) for x [rows, inner] and w [inner, columns], whole; by default [8, 8] and [8, 12],
// the model of the collective plans below.
inline pcg::Graph product_relu_model(std::int64_t rows = 8, std::int64_t inner = 8, std::int64_t columns = 12) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({rows, inner}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({inner, columns}), true);
  const int mm = g.add_node(library(), "matmul", {}, {{x, 0}, {w, 0}});
  g.mark_output({g.add_node(library(), "relu", {}, {{mm, 0}}), 0});
  return g;
}

// A plan of the product_relu_model with the fused collectives, by hand, on devices 0 to degree - 1:
// the product split along its reduction dimension into `degree` partial sums, a reduce_scatter
// into blocks of rows, relu on each block, an all_gather into whole replicas.
inline pcg::Graph collective_plan(int degree) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 8}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({8, 12}), true);
  const int px = g.add_node(library(), "partition", {{"dim", 1}, {"degree", degree}}, {{x, 0}});
  const int pw = g.add_node(library(), "partition", {{"dim", 0}, {"degree", degree}}, {{w, 0}});
  const int mm = g.add_node(library(), "matmul", {}, {{px, 0}, {pw, 0}});
  const int rs = g.add_node(library(), "reduce_scatter", {{"dim", 0}, {"degree", degree}}, {{mm, 0}});
  const int act = g.add_node(library(), "relu", {}, {{rs, 0}});
  const int ag = g.add_node(library(), "all_gather", {{"dim", 0}, {"degree", degree}}, {{act, 0}});
  for (int n : {px, pw, mm, rs, act, ag}) g.set_view(n, pcg::MachineView::contiguous(0, degree));
  g.mark_output({ag, 0});
  return g;
}

// A plan of the product_relu_model on devices 0 to degree - 1: the product's rows split, moved
// to a split of its columns by the fused all_to_all, relu on each block of columns, the blocks
// combined on device 0.
inline pcg::Graph all_to_all_plan(int degree) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 8}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({8, 12}), true);
  const int px = g.add_node(library(), "partition", {{"dim", 0}, {"degree", degree}}, {{x, 0}});
  const int rw = g.add_node(library(), "replicate", {{"degree", degree}}, {{w, 0}});
  const int mm = g.add_node(library(), "matmul", {}, {{px, 0}, {rw, 0}});
  const int swap = g.add_node(library(), "all_to_all", {{"src", 0}, {"dst", 1}, {"degree", degree}}, {{mm, 0}});
  const int act = g.add_node(library(), "relu", {}, {{swap, 0}});
  const int out = g.add_node(library(), "combine", {{"dim", 1}, {"degree", degree}}, {{act, 0}});
  for (int n : {px, rw, mm, swap, act}) g.set_view(n, pcg::MachineView::contiguous(0, degree));
  g.set_view(out, pcg::MachineView::contiguous(0, 1));
  g.mark_output({out, 0});
  return g;
}

// The same on 4 devices as two independent pairs, {0, 2} and {1, 3}, one per block of rows: the
// partial sums of the product (on devices 0 and 2) split into two blocks of rows, each pair
// reduce-scatters its block's columns, relu, each pair all-gathers them back.
inline pcg::Graph collective_plan_in_pairs() {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 8}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({8, 12}), true);
  const int px = g.add_node(library(), "partition", {{"dim", 1}, {"degree", 2}}, {{x, 0}});
  const int pw = g.add_node(library(), "partition", {{"dim", 0}, {"degree", 2}}, {{w, 0}});
  const int mm = g.add_node(library(), "matmul", {}, {{px, 0}, {pw, 0}});
  const int rows = g.add_node(library(), "partition", {{"dim", 0}, {"degree", 2}}, {{mm, 0}});       // task v * 2 + row block
  const int rs = g.add_node(library(), "reduce_scatter", {{"dim", 1}, {"degree", 2}}, {{rows, 0}});  // task row block * 2 + column block
  const int act = g.add_node(library(), "relu", {}, {{rs, 0}});
  const int ag = g.add_node(library(), "all_gather", {{"dim", 1}, {"degree", 2}}, {{act, 0}});  // task replica * 2 + row block
  for (int n : {px, pw, mm}) g.set_view(n, pcg::MachineView{{0, 2}});
  for (int n : {rows, ag}) g.set_view(n, pcg::MachineView::contiguous(0, 4));
  for (int n : {rs, act}) g.set_view(n, pcg::MachineView{{0, 2, 1, 3}});
  g.mark_output({ag, 0});
  return g;
}

// Plans of the product_relu_model whose layout changes are chains of parallel operators that
// make one collective together, as Unity fuses them, on devices 0 to degree - 1:
//   allreduce:  partial sums of the product reduced on device 0, then replicated; relu on every
//               replica;
//   all_gather: blocks of rows of the product combined on device 0, then replicated; relu on
//               every replica.
// The chain ends in the plan's last replicate, which relu reads (a layout change that only makes
// the graph's output is not run).
inline pcg::Graph chain_plan(int degree, Collective kind) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 8}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({8, 12}), true);
  const pcg::MachineView all = pcg::MachineView::contiguous(0, degree), first = pcg::MachineView::contiguous(0, 1);
  const auto add = [&](const std::string& op, pcg::AttrMap attrs, std::vector<pcg::PortRef> inputs, const pcg::MachineView& view) {
    const int n = g.add_node(library(), op, std::move(attrs), std::move(inputs));
    g.set_view(n, view);
    return n;
  };
  if (kind == Collective::allreduce) {
    const int px = add("partition", {{"dim", 1}, {"degree", degree}}, {{x, 0}}, all);
    const int pw = add("partition", {{"dim", 0}, {"degree", degree}}, {{w, 0}}, all);
    const int mm = add("matmul", {}, {{px, 0}, {pw, 0}}, all);
    const int sum = add("reduce", {{"degree", degree}}, {{mm, 0}}, first);
    const int copies = add("replicate", {{"degree", degree}}, {{sum, 0}}, all);
    g.mark_output({add("relu", {}, {{copies, 0}}, all), 0});
    return g;
  }
  const int px = add("partition", {{"dim", 0}, {"degree", degree}}, {{x, 0}}, all);
  const int rw = add("replicate", {{"degree", degree}}, {{w, 0}}, all);
  const int mm = add("matmul", {}, {{px, 0}, {rw, 0}}, all);
  const int whole = add("combine", {{"dim", 0}, {"degree", degree}}, {{mm, 0}}, first);
  const int copies = add("replicate", {{"degree", degree}}, {{whole, 0}}, all);
  g.mark_output({add("relu", {}, {{copies, 0}}, all), 0});
  return g;
}

}  // namespace loom::runtime::sharded_test
