#include "sharded_check.hpp"

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/gradient_sums.hpp"
#include "loom/pcg/graph_order.hpp"
#include "loom/pcg/layout_fusion.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/plan_cost.hpp"
#include "loom/search/task_graph.hpp"

namespace loom::runtime {
namespace {

using namespace sharded_test;

LocalTransport local;

TEST(ShardedExecutor, DataParallelPlanMatchesTheModel) {
  const pcg::Graph g = small_mlp();
  const search::Machine m = search::load_machine("summit").with_devices_per_node(4);
  expect_same_as_logical(g, search::data_parallel(library(), g, m), 4, local);
}

TEST(ShardedExecutor, RandomSplitsOfTheFigureOneMlpMatchTheModel) {
  const pcg::Graph g = small_mlp();
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    expect_same_as_logical(g, random_placements(g, 4, seed), 4, local);
  }
}

TEST(ShardedExecutor, MegatronPlanOfATransformerLayerMatchesTheModel) {
  const pcg::Graph g = small_transformer();
  const search::Machine m = search::load_machine("summit").with_devices_per_node(2);
  expect_same_as_logical(g, search::expert_strategy(library(), g, m), 2, local);
}

// Rank 0 of `processes` that never move anything: for what an executor decides on construction.
struct SilentProcesses final : Transport {
  explicit SilentProcesses(int processes) : processes(processes) {}
  int rank() const override { return 0; }
  int size() const override { return processes; }
  void move_values(const std::vector<Message>&, const std::vector<Message>&) override {}
  void sum_values(HostValues, const std::vector<int>*) override {}
  void gather_values(HostValues, HostValues, const std::vector<int>&) override {}
  void scatter_sums(HostValues, HostValues, const std::vector<int>&) override {}
  int processes;
};

// relu(x + w) on five-dimensional values (as AlphaFold2's), split along the last dimension.
TEST(ShardedExecutor, SplitsTheLastDimensionOfAFiveDimensionalValue) {
  const std::vector<std::int64_t> dims{2, 3, 2, 2, 4};
  const auto sum_relu = [&](bool split) {
    pcg::Graph g;
    int x = g.add_input("x", pcg::ParallelShape::unpartitioned(dims));
    int w = g.add_input("w", pcg::ParallelShape::unpartitioned(dims), true);
    if (split) {
      x = g.add_node(library(), "partition", {{"dim", 4}, {"degree", 2}}, {{x, 0}});
      w = g.add_node(library(), "partition", {{"dim", 4}, {"degree", 2}}, {{w, 0}});
    }
    int out = g.add_node(library(), "relu", {}, {{g.add_node(library(), "ewadd", {}, {{x, 0}, {w, 0}}), 0}});
    if (split) out = g.add_node(library(), "combine", {{"dim", 4}, {"degree", 2}}, {{out, 0}});
    g.mark_output({out, 0});
    return g;
  };
  expect_same_as_logical(sum_relu(false), sum_relu(true), 2, local);
}

TEST(ShardedExecutor, ReduceScatterAndAllGatherPlansMatchTheModel) {
  expect_same_as_logical(product_relu_model(), collective_plan(2), 2, local);
  expect_same_as_logical(product_relu_model(), collective_plan(4), 4, local);
  expect_same_as_logical(product_relu_model(), collective_plan_in_pairs(), 4, local);
}

TEST(ShardedExecutor, OneProcessRunsNoCollective) {
  const pcg::Graph plan = collective_plan(4);
  ShardedExecutor<double> e(library(), plan, builtin_kernels(), local, {"w"}, 4);
  for (Collective kind : {Collective::allreduce, Collective::reduce_scatter, Collective::all_gather})
    EXPECT_TRUE(e.collective_nodes(kind).empty());
}

TEST(ShardedExecutor, FindsReduceScatterAndAllGatherAmongProcesses) {
  for (const auto& [plan, devices] : {std::pair{collective_plan(2), 2}, {collective_plan(4), 4}, {collective_plan_in_pairs(), 4}}) {
    SilentProcesses processes(devices);
    ShardedExecutor<double> e(library(), plan, builtin_kernels(), processes, {"w"}, devices);
    EXPECT_EQ(e.collective_nodes(Collective::reduce_scatter), nodes_running(plan, "reduce_scatter"));
    EXPECT_EQ(e.collective_nodes(Collective::all_gather), nodes_running(plan, "all_gather"));
    EXPECT_TRUE(e.collective_nodes(Collective::allreduce).empty());
  }
}

TEST(ShardedExecutor, FindsAnAllToAllAmongProcesses) {
  for (int devices : {2, 4}) {
    const pcg::Graph plan = all_to_all_plan(devices);
    SilentProcesses processes(devices);
    ShardedExecutor<double> e(library(), plan, builtin_kernels(), processes, {"w"}, devices);
    EXPECT_EQ(e.collective_nodes(Collective::all_to_all), nodes_running(plan, "all_to_all"));
    EXPECT_TRUE(e.collective_nodes(Collective::all_gather).empty());
    expect_same_as_logical(product_relu_model(), plan, devices, local);
  }
}

TEST(ShardedExecutor, FusesAChainOfParallelOperatorsThatIsOneCollective) {
  for (Collective kind : {Collective::allreduce, Collective::all_gather}) {
    const pcg::Graph plan = chain_plan(2, kind);
    SilentProcesses processes(2);
    ShardedExecutor<double> e(library(), plan, builtin_kernels(), processes, {"w"}, 2);
    EXPECT_EQ(e.collective_nodes(kind), std::vector<pcg::NodeId>{nodes_running(plan, "replicate").back()});
    // One process runs every device: nothing to fuse, every piece is its own.
    ShardedExecutor<double> single(library(), plan, builtin_kernels(), local, {"w"}, 2);
    EXPECT_TRUE(single.collective_nodes(kind).empty());
    expect_same_as_logical(product_relu_model(), plan, 2, local);
  }
}

// The product's rows on 4 devices, then combine, replicate, combine, replicate: the second
// combine runs from the first's halves as one all-gather on devices 0 and 1 (the first replicate
// fused away), and the last replicate walks back past both to the product's quarters, from which
// the whole chain is one all-gather on all four. It runs so, the simulator charges it so, and it
// trains as the model does.
TEST(ShardedExecutor, AChainFusesPastAnEarlierFusionToItsFarthestInput) {
  pcg::Graph plan;
  const int x = plan.add_input("x", pcg::ParallelShape::unpartitioned({8, 8}));
  const int w = plan.add_input("w", pcg::ParallelShape::unpartitioned({8, 12}), true);
  const pcg::MachineView all = pcg::MachineView::contiguous(0, 4), pair = pcg::MachineView::contiguous(0, 2);
  const auto add = [&](const std::string& op, pcg::AttrMap attrs, std::vector<pcg::PortRef> inputs, const pcg::MachineView& view) {
    const int n = plan.add_node(library(), op, std::move(attrs), std::move(inputs));
    plan.set_view(n, view);
    return n;
  };
  const int px = add("partition", {{"dim", 0}, {"degree", 4}}, {{x, 0}}, all);
  const int rw = add("replicate", {{"degree", 4}}, {{w, 0}}, all);
  const int mm = add("matmul", {}, {{px, 0}, {rw, 0}}, all);
  const int halves = add("combine", {{"dim", 0}, {"degree", 2}}, {{mm, 0}}, pair);
  const int halves_twice = add("replicate", {{"degree", 2}}, {{halves, 0}}, all);
  const int whole_twice = add("combine", {{"dim", 0}, {"degree", 2}}, {{halves_twice, 0}}, pair);
  const int copies = add("replicate", {{"degree", 2}}, {{whole_twice, 0}}, all);
  plan.mark_output({add("relu", {}, {{copies, 0}}, all), 0});
  const auto is_layout_change = [](const pcg::Node& n) { return library().find_parallel(n.op) || library().find_fused(n.op); };
  const pcg::LayoutChangeSources fused =
      pcg::fuse_layout_changes(plan, is_layout_change, [](const pcg::Node& n) { return n.view_or_default(); });
  EXPECT_EQ(fused.source[static_cast<std::size_t>(whole_twice)], (pcg::PortRef{halves, 0}));
  EXPECT_EQ(fused.source[static_cast<std::size_t>(copies)], (pcg::PortRef{mm, 0}));
  for (int away : {halves, halves_twice, whole_twice}) EXPECT_TRUE(fused.fused_away[static_cast<std::size_t>(away)]) << away;
  const search::CostModel costs(library(), search::load_machine("summit").with_devices_per_node(4));
  const pcg::LayoutChangeSources charged = search::layout_changes_as_run(plan, costs);  // what the simulator charges
  EXPECT_EQ(charged.source, fused.source);
  EXPECT_EQ(charged.fused_away, fused.fused_away);
  SilentProcesses processes(4);
  ShardedExecutor<double> e(library(), plan, builtin_kernels(), processes, {"w"}, 4);
  EXPECT_EQ(e.collective_nodes(Collective::all_gather), std::vector<pcg::NodeId>{copies});
  expect_same_as_logical(product_relu_model(), plan, 4, local);
}

// Partial sums that a consumer needs as blocks of rows: the plan's move is the cheapest chain of
// the library's forms (the RVD search), here the fused reduce_scatter, and the runtime runs it as
// that one collective among the processes.
TEST(ShardedExecutor, TheReduceScatterTheMoveSearchChoosesRunsAsOneCollective) {
  const pcg::Graph model = product_relu_model(64, 8, 256);
  const search::Machine machine = search::load_machine("summit").with_nodes(1).with_devices_per_node(2);
  std::vector<search::Placement> placements = search::unsplit_placements(model);
  const auto split = [](std::vector<std::int64_t> dims, std::vector<std::int64_t> D, std::int64_t V, std::int64_t R) {
    return pcg::ParallelShape::partitioned(std::move(dims), std::move(D), V, R);
  };
  for (const pcg::Node& n : model.nodes()) {
    if (n.op == "matmul")
      placements[n.id.index()].config = {
          {split({64, 8}, {1, 2}, 1, 1), split({8, 256}, {2, 1}, 1, 1)}, {split({64, 256}, {}, 2, 1)}, "sum"};
    if (n.op == "relu") placements[n.id.index()].config = {{split({64, 256}, {2, 1}, 1, 1)}, {split({64, 256}, {2, 1}, 1, 1)}, "rows"};
  }
  const search::CostModel cost(library(), machine);
  const pcg::Graph plan = search::materialize(model, placements, library(), cost.moves());
  ASSERT_EQ(nodes_running(plan, "reduce_scatter").size(), 1u);
  EXPECT_TRUE(nodes_running(plan, "reduce").empty());
  SilentProcesses processes(2);
  ShardedExecutor<double> e(library(), plan, builtin_kernels(), processes, {"w"}, 2);
  EXPECT_EQ(e.collective_nodes(Collective::reduce_scatter), nodes_running(plan, "reduce_scatter"));
  expect_same_as_logical(model, plan, 2, local);
}

// Copies wanted on another node: the move search cuts the value into pieces that cross between
// the nodes once in all, then gathers them among the consumers (SuperScaler's inter-RVD). The
// runtime runs a gather as a collective exactly where the simulator's account of the plan does
// (here, from copies of halves, the pieces move point to point within the node), and the plan
// computes what the model does.
TEST(ShardedExecutor, CopiesForAnotherNodeCrossInPiecesAndAreGatheredThere) {
  const pcg::Graph model = models::build_model(library(), "mlp_fig1", {{"batch", 256}, {"in", 32}, {"hidden", 1024}, {"out", 64}});
  const search::Machine machine = search::load_machine("summit").with_nodes(2).with_devices_per_node(4);
  std::vector<search::Placement> placements = search::unsplit_placements(model);
  const pcg::Node& last = model.node(model.outputs().at(0).node);
  std::optional<search::ParallelConfig> by_columns;
  for (const search::ParallelConfig& c : search::node_configs(library(), model, last, {4}))
    if (c.tasks() == 4 && c.inputs.at(0).R == 4) by_columns = c;
  ASSERT_TRUE(by_columns) << "no split of the last product that wants its input copied";
  placements[last.id.index()] = {*by_columns, 4};
  const search::CostModel cost(library(), machine);
  const pcg::Graph plan = search::materialize(model, placements, library(), cost.moves());
  const auto is_layout_change_here = [](const pcg::Node& n) { return library().find_parallel(n.op) || library().find_fused(n.op); };
  const std::vector<pcg::NodeId> gathers = nodes_running(plan, "all_gather");
  ASSERT_FALSE(gathers.empty()) << "the copies should be gathered on the consumers' node";
  for (pcg::NodeId g : gathers) EXPECT_EQ(plan.node(g).view_or_default(), pcg::MachineView::contiguous(4, 4));
  // Nothing crosses whole: the step from the first node onto the second makes pieces.
  int crossings = 0;
  for (const pcg::Node& n : plan.nodes())
    if (is_layout_change_here(n) && n.view_or_default().devices.front() == 4 &&
        plan.node(n.inputs[0].node).view_or_default().devices.front() == 0) {
      EXPECT_GT(n.output_shapes[0].D[1], 1) << n.describe() << " sends the value whole";
      ++crossings;
    }
  EXPECT_EQ(crossings, 1);
  SilentProcesses processes(8);
  ShardedExecutor<double> e(library(), plan, builtin_kernels(), processes, weights_of(model), 8);
  const auto view_of = [](const pcg::Node& n) { return n.view_or_default(); };
  const pcg::LayoutChangeSources fused = pcg::fuse_layout_changes(plan, is_layout_change_here, view_of);
  for (pcg::NodeId g : gathers) {
    const pcg::Node& n = plan.node(g);
    const pcg::PortRef from = fused.source[g.index()];
    const bool one = cost.moves().moves_as_one_collective(plan.shape_of(from), plan.node(from.node).view_or_default(), n.output_shapes[0],
                                                          n.view_or_default());
    const std::vector<pcg::NodeId> run = e.collective_nodes(Collective::all_gather);
    EXPECT_EQ(std::count(run.begin(), run.end(), g), one ? 1 : 0) << n.describe();
  }
  expect_same_as_logical(model, plan, 8, local);
}

TEST(LayoutFusion, TheSimulatorChargesTheChainsTheRuntimeFuses) {
  const auto is_layout_change = [](const pcg::Node& n) { return library().find_parallel(n.op) || library().find_fused(n.op); };
  const auto view_of = [](const pcg::Node& n) { return *n.view; };
  const search::Machine machine = search::load_machine("summit").with_devices_per_node(2);
  const search::CostModel model(library(), machine);
  for (Collective kind : {Collective::allreduce, Collective::all_gather}) {
    const pcg::Graph plan = chain_plan(2, kind);
    const pcg::NodeId last = nodes_running(plan, "replicate").back();
    const int before = plan.node(last).inputs[0].node;  // the reduce or combine the replicate reads
    const pcg::PortRef first_input = plan.node(before).inputs[0];
    const pcg::LayoutChangeSources fused = pcg::fuse_layout_changes(plan, is_layout_change, view_of);
    EXPECT_EQ(fused.source[static_cast<std::size_t>(last)], first_input);
    EXPECT_TRUE(fused.fused_away[static_cast<std::size_t>(before)]);
    EXPECT_FALSE(fused.fused_away[static_cast<std::size_t>(last)]);
    EXPECT_EQ(search::layout_change_sources(plan, model), fused.source);
    const pcg::LayoutChangeSources apart = pcg::fuse_layout_changes(plan, is_layout_change, view_of, false);
    for (const pcg::Node& n : plan.nodes()) {
      EXPECT_FALSE(apart.fused_away[n.id.index()]);
      if (is_layout_change(n)) {
        EXPECT_EQ(apart.source[n.id.index()], n.inputs[0]);
      }
    }
  }
}

// Halves of a weight read on devices 0 and 1, and the whole of it on device 2: the boxes overlap,
// so the runtime sums the whole gradient among every process, and the simulator charges that sum.
TEST(GradientSums, OverlappingReadsOfAWeightAreSummedWholeByEveryDevice) {
  pcg::Graph plan;
  const int w = plan.add_input("w", pcg::ParallelShape::unpartitioned({8, 12}), true);
  const int halves = plan.add_node(library(), "partition", {{"dim", 0}, {"degree", 2}}, {{w, 0}});
  plan.set_view(halves, pcg::MachineView::contiguous(0, 2));
  const int a = plan.add_node(library(), "relu", {}, {{halves, 0}});
  plan.set_view(a, pcg::MachineView::contiguous(0, 2));
  const int b = plan.add_node(library(), "relu", {}, {{w, 0}});
  plan.set_view(b, pcg::MachineView{{2}});
  plan.mark_output({a, 0});
  plan.mark_output({b, 0});
  const auto is_layout_change = [](const pcg::Node& n) { return library().find_parallel(n.op) || library().find_fused(n.op); };
  const auto view_of = [](const pcg::Node& n) { return n.view ? *n.view : pcg::MachineView::contiguous(0, n.tasks()); };
  const auto reads = pcg::input_reads(plan, pcg::fuse_layout_changes(plan, is_layout_change, view_of), is_layout_change, view_of,
                                      [](const pcg::Node& n) { return n.op == pcg::kWeightOp; });
  ASSERT_EQ(reads.count(w), 1u);
  const pcg::InputReads& r = reads.at(w);
  EXPECT_EQ(r.boxes.size(), 3u);
  EXPECT_TRUE(r.overlapping());
  EXPECT_EQ(r.first_reader, halves);
  const pcg::Region whole = pcg::whole_region({8, 12});
  const std::vector<pcg::GradientShare> sums = r.sums(whole, 4);
  ASSERT_EQ(sums.size(), 1u);
  EXPECT_EQ(sums[0].box, whole);
  EXPECT_EQ(sums[0].devices, (std::vector<int>{0, 1, 2, 3}));
  const search::Machine machine = search::load_machine("summit").with_devices_per_node(4);
  const search::TaskGraph tasks = search::build_task_graph(plan, search::CostModel(library(), machine));
  std::set<int> summing;
  for (const search::SimTask& t : tasks.tasks)
    if (t.label.rfind("gradient allreduce", 0) == 0) summing.insert(t.device);
  EXPECT_EQ(summing, (std::set<int>{0, 1, 2, 3}));
}

TEST(ShardedExecutor, KeepsPointToPointWhenTheGroupsAreNotOnTheSameProcesses) {
  // The first pair's blocks of the reduce_scatter on devices 1 and 0 where its partial sums are on
  // 0 and 2: the group's pieces are not one old and one new on each of its processes.
  pcg::Graph plan = collective_plan_in_pairs();
  plan.set_view(nodes_running(plan, "reduce_scatter").at(0), pcg::MachineView{{1, 0, 2, 3}});
  SilentProcesses processes(4);
  ShardedExecutor<double> e(library(), plan, builtin_kernels(), processes, {"w"}, 4);
  EXPECT_TRUE(e.collective_nodes(Collective::reduce_scatter).empty());
  EXPECT_EQ(e.collective_nodes(Collective::all_gather), nodes_running(plan, "all_gather"));
  expect_same_as_logical(product_relu_model(), plan, 4, local);
}

TEST(ShardedExecutor, RefusesAProcessCountOtherThanThePlans) {
  SilentProcesses four(4);
  try {
    ShardedExecutor<double> e(library(), small_mlp(), builtin_kernels(), four, {}, 2);
    FAIL() << "a plan for 2 devices ran on 4 processes";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("mpirun -np 2"), std::string::npos) << e.what();
  }
}

// Two transformer layers with activation checkpoints (every third operator keeps its output, those
// between are dropped and computed again): the gradients are those of the run that keeps every
// output, bit for bit, and the activations held at once are fewer. Either way, the peak the
// executor measures is the simulator's activation memory for the same graph, within 10 %.
TEST(ShardedExecutor, RecomputesDroppedOutputsAndHoldsWhatTheSimulatorSays) {
  const pcg::Graph g =
      models::build_model(library(), "bert_large",
                          {{"batch", 2}, {"seq", 8}, {"layers", 2}, {"hidden", 16}, {"heads", 2}, {"vocab", 32}, {"max_positions", 8}});
  std::vector<pcg::NodeId> dropped;
  std::size_t operators = 0;
  for (const pcg::Node& n : g.nodes())
    if (!n.is_graph_input() && operators++ % 3 != 2) dropped.push_back(n.id);
  const NamedTensors<float> feeds = convert<float>(models::random_values(library(), g, 5));
  const search::CostModel model(library(), search::load_machine("summit").with_devices_per_node(1));
  const auto run = [&](const std::vector<pcg::NodeId>& recompute) {
    ShardedExecutor<float> e(library(), g, builtin_kernels(), local, weights_of(g), 1);
    e.recompute(recompute);
    e.forward(feeds);
    std::vector<Tensor<float>> output_grads;
    for (std::size_t i = 0; i < g.outputs().size(); ++i) {
      output_grads.push_back(e.output(i));
      for (std::size_t k = 0; k < output_grads.back().data.size(); ++k) output_grads.back().data[k] = std::sin(static_cast<float>(k));
    }
    NamedTensors<float> grads = e.backward(output_grads);
    const double simulated = search::plan_memory(g, model, {}, recompute, true)[0];
    EXPECT_NEAR(static_cast<double>(e.peak_activation_bytes()), simulated, 0.1 * simulated) << recompute.size() << " recomputed";
    return std::pair{std::move(grads), e.peak_activation_bytes()};
  };
  const auto [kept, kept_peak] = run({});
  const auto [recomputed, recomputed_peak] = run(dropped);
  EXPECT_LT(recomputed_peak, kept_peak);
  ASSERT_EQ(recomputed.size(), kept.size());
  for (const auto& [name, want] : kept) EXPECT_EQ(recomputed.at(name).data, want.data) << name;
}

// x cut into pieces on `devices`, three ReLUs a, b, c and a product with a weight, each piece on
// its device; the pieces joined on device 0. With `outside_reader`, a ReLU on device 0 reads b too.
pcg::Graph relu_chain(const std::vector<int>& devices, bool outside_reader = false) {
  pcg::Graph g;
  const auto pieces = static_cast<std::int64_t>(devices.size());
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 6}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({6, 6}), true);
  const int px = g.add_node(library(), "partition", {{"dim", 0}, {"degree", pieces}}, {{x, 0}});
  const int rw = g.add_node(library(), "replicate", {{"degree", pieces}}, {{w, 0}});
  const int a = g.add_node(library(), "relu", {}, {{g.add_node(library(), "matmul", {}, {{px, 0}, {rw, 0}}, "m"), 0}}, "a");
  const int b = g.add_node(library(), "relu", {}, {{a, 0}}, "b");
  const int c = g.add_node(library(), "relu", {}, {{b, 0}}, "c");
  const int out = g.add_node(library(), "combine", {{"dim", 0}, {"degree", pieces}}, {{c, 0}});
  g.mark_output({out, 0});
  for (int id : {px, rw, a, b, c, g.find("m")->value()}) g.set_view(pcg::NodeId(id), pcg::MachineView{devices});
  g.set_view(pcg::NodeId(out), pcg::MachineView::contiguous(0, 1));
  if (outside_reader) {
    const int joined = g.add_node(library(), "combine", {{"dim", 0}, {"degree", pieces}}, {{b, 0}});
    g.set_view(pcg::NodeId(joined), pcg::MachineView::contiguous(0, 1));
    const int y = g.add_node(library(), "relu", {}, {{joined, 0}}, "y");
    g.set_view(pcg::NodeId(y), pcg::MachineView::contiguous(0, 1));
    g.mark_output({y, 0});
  }
  return g;
}

std::vector<std::vector<pcg::NodeId>> regions_of(const pcg::Graph& g, const std::vector<std::string>& dropped_names) {
  std::vector<bool> dropped(g.size(), false);
  for (const std::string& name : dropped_names) dropped[g.find(name)->index()] = true;
  return search::piecewise_regions(
      g, [](const pcg::Node& n) { return library().find_parallel(n.op) != nullptr; }, dropped);
}

TEST(CoShardRegions, AreTheCoShardedOperatorsAroundARecomputedOne) {
  const pcg::Graph coshard = relu_chain({0, 0, 1, 1});
  const auto regions = regions_of(coshard, {"b"});
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0], (std::vector<pcg::NodeId>{*coshard.find("m"), *coshard.find("a"), *coshard.find("b"), *coshard.find("c")}));
  EXPECT_TRUE(regions_of(coshard, {}).empty());                            // nothing recomputed
  EXPECT_TRUE(regions_of(relu_chain({0, 1, 2, 3}), {"b"}).empty());        // one piece per device: no co-shard
  EXPECT_TRUE(regions_of(relu_chain({0, 0, 1, 1}, true), {"b"}).empty());  // b is read from outside
  // The product placed one piece per device is outside the region {a, b, c}: recomputed too, it
  // would be gone when the region's first member needs it.
  pcg::Graph spread = relu_chain({0, 0, 1, 1});
  spread.set_view(*spread.find("m"), pcg::MachineView{{0, 1, 2, 3}});
  ASSERT_EQ(regions_of(spread, {"b"}).size(), 1u);
  EXPECT_EQ(regions_of(spread, {"b"})[0].size(), 3u);
  EXPECT_TRUE(regions_of(spread, {"m", "b"}).empty());
}

// Co-sharded ReLUs with b recomputed run their backward piece by piece: the gradients are those of
// the run that keeps b, bit for bit, the process holds less, and what it holds is the simulator's
// activation memory within 10 %.
TEST(ShardedExecutor, RunsACoShardRegionPieceByPiece) {
  const pcg::Graph g = relu_chain({0, 0, 0, 0});
  const NamedTensors<double> feeds = models::random_values(library(), g, 3);
  search::MemoryOptions memory;
  memory.bytes_per_element = sizeof(double);
  memory.moves_data = [](const pcg::Node& n) { return library().find_parallel(n.op) != nullptr; };
  memory.activations_only = true;
  const search::Machine machine = search::load_machine("summit").with_devices_per_node(1);
  const auto run = [&](const std::vector<pcg::NodeId>& recompute) {
    ShardedExecutor<double> e(library(), g, builtin_kernels(), local, {"w"}, 1);
    e.recompute(recompute);
    e.forward(feeds);
    Tensor<double> grad = e.output(0);
    for (std::size_t k = 0; k < grad.data.size(); ++k) grad.data[k] = std::cos(static_cast<double>(k));
    NamedTensors<double> grads = e.backward({grad});
    memory.recomputed = recompute;
    const double simulated = search::memory_per_device(g, machine, memory)[0];
    EXPECT_NEAR(static_cast<double>(e.peak_activation_bytes()), simulated, 0.1 * simulated) << recompute.size() << " recomputed";
    return std::pair{grads.at("w").data, e.peak_activation_bytes()};
  };
  const auto [kept, kept_peak] = run({});
  const auto [recomputed, recomputed_peak] = run({*g.find("a"), *g.find("b")});
  EXPECT_EQ(recomputed, kept);
  EXPECT_LT(recomputed_peak, kept_peak);
}

// Two branches over x, each a wide ReLU narrowed by a product with a weight, the ReLUs recomputed
// (they read no weight, so no gradient flows into them). In the graph's order a's ReLU is freed
// once its product has read it, before c's is made; a plan that orders c ahead of a's product holds
// both at once. The executor runs the plan's graph in its order, so it measures that: a wide value
// more at its peak, as the memory model counts it, and the same gradients.
TEST(ShardedExecutor, RunsThePassesInTheOrderAPlanImposes) {
  pcg::Graph g;
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 64}));
  const int w2 = g.add_input("w2", pcg::ParallelShape::unpartitioned({64, 2}), true);
  const int w4 = g.add_input("w4", pcg::ParallelShape::unpartitioned({64, 2}), true);
  const int a = g.add_node(library(), "relu", {}, {{x, 0}}, "a");
  const int a2 = g.add_node(library(), "matmul", {}, {{a, 0}, {w2, 0}}, "a2");
  const int c = g.add_node(library(), "relu", {}, {{x, 0}}, "c");
  const int c2 = g.add_node(library(), "matmul", {}, {{c, 0}, {w4, 0}}, "c2");
  g.mark_output({g.add_node(library(), "ewadd", {}, {{a2, 0}, {c2, 0}}, "y"), 0});
  std::vector<pcg::NodeId> ids;
  const pcg::Graph ordered = pcg::ordered_by(g, {{pcg::NodeId(c), pcg::NodeId(a2)}}, &ids);
  ASSERT_LT(ids[static_cast<std::size_t>(c)], ids[static_cast<std::size_t>(a2)]);
  const NamedTensors<double> feeds = models::random_values(library(), g, 5);
  search::MemoryOptions memory;
  memory.bytes_per_element = sizeof(double);
  memory.activations_only = true;
  const search::Machine machine = search::load_machine("summit").with_devices_per_node(1);
  const auto run = [&](const pcg::Graph& graph) {
    ShardedExecutor<double> e(library(), graph, builtin_kernels(), local, {"w2", "w4"}, 1);
    const std::vector<pcg::NodeId> recompute{*graph.find("a"), *graph.find("c")};
    e.recompute(recompute);
    e.forward(feeds);
    Tensor<double> grad = e.output(0);
    for (std::size_t k = 0; k < grad.data.size(); ++k) grad.data[k] = std::sin(static_cast<double>(k) + 1);
    NamedTensors<double> grads = e.backward({grad});
    memory.recomputed = recompute;
    return std::tuple{std::move(grads), static_cast<double>(e.peak_activation_bytes()),
                      search::memory_per_device(graph, machine, memory)[0]};
  };
  const auto [plain_grads, plain_peak, plain_simulated] = run(g);
  const auto [ordered_grads, ordered_peak, ordered_simulated] = run(ordered);
  EXPECT_EQ(ordered_grads.at("w2").data, plain_grads.at("w2").data);
  EXPECT_EQ(ordered_grads.at("w4").data, plain_grads.at("w4").data);
  const double wide = 8 * 64 * sizeof(double);
  EXPECT_GE(ordered_peak - plain_peak, 0.9 * wide) << plain_peak << " then " << ordered_peak;
  EXPECT_GE(ordered_simulated - plain_simulated, 0.9 * wide) << plain_simulated << " then " << ordered_simulated;
  EXPECT_NEAR(plain_peak, plain_simulated, 0.1 * plain_simulated);
  EXPECT_NEAR(ordered_peak, ordered_simulated, 0.1 * ordered_simulated);
}

// A region whose last member takes no part in the backward pass (it reads only the data): p =
// relu(x) is recomputed for q = p · w, and r = relu(p) comes last. The region still runs piece by
// piece at r's turn, as the simulator counts it: the same gradient, and the simulator's peak is the
// measured one (p, made of the data alone, takes no gradient; r's comes from the loss).
TEST(ShardedExecutor, RunsARegionWhoseLastMemberHasNoGradient) {
  pcg::Graph g;
  const std::vector<int> devices{0, 0, 0, 0};
  const int x = g.add_input("x", pcg::ParallelShape::unpartitioned({8, 6}));
  const int w = g.add_input("w", pcg::ParallelShape::unpartitioned({6, 6}), true);
  const int px = g.add_node(library(), "partition", {{"dim", 0}, {"degree", 4}}, {{x, 0}});
  const int rw = g.add_node(library(), "replicate", {{"degree", 4}}, {{w, 0}});
  const int p = g.add_node(library(), "relu", {}, {{px, 0}}, "p");
  const int q = g.add_node(library(), "matmul", {}, {{p, 0}, {rw, 0}}, "q");
  const int r = g.add_node(library(), "relu", {}, {{p, 0}}, "r");
  for (int id : {px, rw, p, q, r}) g.set_view(pcg::NodeId(id), pcg::MachineView{devices});
  for (int value : {q, r}) {
    const int joined = g.add_node(library(), "combine", {{"dim", 0}, {"degree", 4}}, {{value, 0}});
    g.set_view(pcg::NodeId(joined), pcg::MachineView::contiguous(0, 1));
    g.mark_output({joined, 0});
  }
  ASSERT_EQ(regions_of(g, {"p"}).size(), 1u);
  EXPECT_EQ(regions_of(g, {"p"})[0].back(), pcg::NodeId(r));
  const NamedTensors<double> feeds = models::random_values(library(), g, 5);
  search::MemoryOptions memory;
  memory.bytes_per_element = sizeof(double);
  memory.moves_data = [](const pcg::Node& n) { return library().find_parallel(n.op) != nullptr; };
  memory.activations_only = true;
  memory.recomputed = {pcg::NodeId(p)};
  const double simulated = search::memory_per_device(g, search::load_machine("summit").with_devices_per_node(1), memory)[0];
  const auto run = [&](const std::vector<pcg::NodeId>& recompute) {
    ShardedExecutor<double> e(library(), g, builtin_kernels(), local, {"w"}, 1);
    e.recompute(recompute);
    e.forward(feeds);
    std::vector<Tensor<double>> grads{e.output(0), e.output(1)};
    for (Tensor<double>& t : grads)
      for (std::size_t k = 0; k < t.data.size(); ++k) t.data[k] = std::sin(static_cast<double>(k) + 1);
    NamedTensors<double> out = e.backward(grads);
    return std::pair{out.at("w").data, e.peak_activation_bytes()};
  };
  const auto [kept, kept_peak] = run({});
  const auto [recomputed, recomputed_peak] = run({pcg::NodeId(p)});
  EXPECT_EQ(recomputed, kept);
  EXPECT_EQ(simulated, static_cast<double>(recomputed_peak));
  EXPECT_LT(recomputed_peak, kept_peak);
}

// The last ReLU's pieces are what the loss reads (the gather after it is not run): recomputing it
// keeps it all the same, in the runtime and in the simulator's memory.
TEST(ShardedExecutor, KeepsWhatTheLossReadsThoughItIsRecomputed) {
  const pcg::Graph g = relu_chain({0, 0, 0, 0});
  search::MemoryOptions memory;
  memory.moves_data = [](const pcg::Node& n) { return library().find_parallel(n.op) != nullptr; };
  memory.activations_only = true;
  const search::Machine machine = search::load_machine("summit").with_devices_per_node(1);
  const double kept = search::memory_per_device(g, machine, memory)[0];
  memory.recomputed = {*g.find("c")};
  EXPECT_EQ(search::memory_per_device(g, machine, memory)[0], kept);
  const NamedTensors<float> feeds = convert<float>(models::random_values(library(), g, 3));
  const auto peak = [&](const std::vector<pcg::NodeId>& recompute) {
    ShardedExecutor<float> e(library(), g, builtin_kernels(), local, {"w"}, 1);
    e.recompute(recompute);
    e.forward(feeds);
    e.backward({e.output(0)});
    return e.peak_activation_bytes();
  };
  EXPECT_EQ(peak({*g.find("c")}), peak({}));
  EXPECT_LT(peak({*g.find("b")}), peak({}));
}

TEST(ShardedExecutor, RefusesToRecomputeAnInputOrANodeItLacks) {
  const pcg::Graph g = small_mlp();
  ShardedExecutor<double> e(library(), g, builtin_kernels(), local, weights_of(g), 1);
  EXPECT_THROW(e.recompute({g.nodes().front().id}), LoomError);
  EXPECT_THROW(e.recompute({pcg::NodeId(static_cast<int>(g.size()))}), LoomError);
  const auto first_operator = std::find_if(g.nodes().begin(), g.nodes().end(), [](const pcg::Node& n) { return !n.is_graph_input(); })->id;
  EXPECT_NO_THROW(e.recompute({first_operator}));
}

}  // namespace
}  // namespace loom::runtime
