#include "loom/search/pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/pipeline_order.hpp"
#include "loom/search/simulator.hpp"
#include "task_graph_plan.hpp"

namespace loom::search {

pcg::Graph micro_batch_graph(const pcg::Graph& graph, const pcg::OpCatalog& catalog, int microbatches) {
  if (microbatches < 1) throw LoomError("micro-batches must be at least 1, not " + std::to_string(microbatches));
  pcg::Graph out;
  for (const pcg::Node& n : graph.nodes()) {
    int id = 0;
    if (n.is_graph_input()) {
      pcg::ParallelShape shape = n.output_shapes[0];
      if (n.op == pcg::kInputOp && shape.rank() > 0) {
        if (shape.dims[0] % microbatches != 0)
          throw LoomError(n.describe() + ": its batch of " + std::to_string(shape.dims[0]) + " does not divide into " +
                          std::to_string(microbatches) + " micro-batches");
        shape.dims[0] /= microbatches;
        shape.validate();
      }
      id = out.add_input_like(n, shape);
    } else {
      id = out.add_node(catalog, n.op, n.attrs, n.inputs, n.name);
    }
    if (n.view) out.set_view(id, *n.view);
  }
  for (pcg::PortRef o : graph.outputs()) out.mark_output(o);
  return out;
}

std::vector<int> balanced_stages(const pcg::Graph& graph, const CostModel& model, int stages, pcg::NodeId through) {
  const auto cut = [through](const pcg::Node& n) { return n.is_graph_input() || (through != pcg::kNoNode && n.id > through); };
  std::vector<double> seconds(graph.size(), 0);
  double total = 0;
  for (const pcg::Node& n : graph.nodes())
    if (!cut(n) && model.is_compute(n)) total += seconds[n.id.index()] = model.compute(graph, n).seconds;
  std::vector<int> out(graph.size(), -1);
  double before = 0;
  for (const pcg::Node& n : graph.nodes()) {
    if (cut(n)) continue;
    const double mine = seconds[n.id.index()];
    // The stage whose share of the total holds the middle of this operator's time.
    const double middle = total > 0 ? (before + mine / 2) / total : 0;
    out[n.id.index()] = std::min(stages - 1, static_cast<int>(std::floor(middle * stages)));
    before += mine;
  }
  return out;
}

std::vector<int> looping_stages(const pcg::Graph& graph, const CostModel& model, int stages) {
  // Each weight's first reader, and the position after which every weight has been read once.
  std::vector<int> first_reader(graph.size(), -1);
  pcg::NodeId last_first_read = pcg::kNoNode;
  bool read_again = false;
  for (const pcg::Node& n : graph.nodes())
    for (pcg::PortRef in : n.inputs) {
      if (graph.node(in.node).op != pcg::kWeightOp) continue;
      int& first = first_reader[in.node.index()];
      if (first < 0) {
        first = n.id.value();
        last_first_read = std::max(last_first_read, n.id);
      } else if (first != n.id.value()) {
        read_again = true;
      }
    }
  if (!read_again || last_first_read == pcg::kNoNode) return {};
  std::vector<int> stage_of = balanced_stages(graph, model, stages, last_first_read);
  if (std::set<int>(stage_of.begin(), stage_of.end()).size() < static_cast<std::size_t>(stages) + 1) return {};  // -1 and every stage
  // Later, from the last operator back: one that reads a weight runs where the weight's first reader
  // does; one that reads none where the first of its readers runs, so its value goes on forward
  // (an output nobody reads ends in the last stage).
  const std::vector<std::vector<pcg::NodeId>> readers = graph.all_consumers();
  for (auto it = graph.nodes().rbegin(); it != graph.nodes().rend() && it->id > last_first_read; ++it) {
    const pcg::Node& n = *it;
    if (n.is_graph_input()) continue;
    int stage = -1;
    for (pcg::PortRef in : n.inputs)
      if (graph.node(in.node).op == pcg::kWeightOp) {
        stage = stage_of[static_cast<std::size_t>(first_reader[in.node.index()])];
        break;
      }
    if (stage < 0) {
      stage = stages - 1;
      for (pcg::NodeId r : readers[n.id.index()]) stage = std::min(stage, stage_of[r.index()]);
    }
    stage_of[n.id.index()] = stage;
  }
  bool loops = false;
  for (const pcg::Node& n : graph.nodes())
    for (pcg::PortRef in : n.inputs) loops = loops || stage_of[in.node.index()] > stage_of[n.id.index()];
  if (!loops) return {};
  return stage_of;
}

std::vector<Placement> pipeline_placements(const spec::Library& library, const pcg::Graph& graph, const std::vector<int>& stage_of,
                                           int stages, int devices) {
  const int per_stage = devices / stages;
  const std::vector<std::int64_t> degrees = degrees_from(per_stage);
  std::vector<Placement> out = unsplit_placements(graph);
  for (const pcg::Node& n : graph.nodes()) {
    const int stage = stage_of[n.id.index()];
    if (stage < 0) continue;
    Placement& p = out[n.id.index()];
    if (auto c = split_config(library, graph, n, 0, 0, degrees)) p.config = std::move(*c);
    p.first_device = stage * per_stage;
  }
  return out;
}

int stage_of_device(int device, int devices, int stages) { return device / std::max(1, devices / stages); }

std::vector<PipelineStep> stage_steps(PipelineOrder order, int stage, int stages, int microbatches, int laps) {
  std::vector<PipelineStep> out;
  const int last = std::max(1, laps) - 1;
  for (int lap = 0; lap < last; ++lap)
    for (int m = 0; m < microbatches; ++m) out.push_back({m, lap, false});
  if (order == PipelineOrder::GPipe) {
    for (int m = 0; m < microbatches; ++m) out.push_back({m, last, false});
    for (int m = microbatches - 1; m >= 0; --m) out.push_back({m, last, true});
    return out;
  }
  const int warmup = std::min(stages - stage - 1, microbatches);
  for (int m = 0; m < warmup; ++m) out.push_back({m, last, false});
  for (int k = 0; warmup + k < microbatches; ++k) {
    out.push_back({warmup + k, last, false});
    out.push_back({k, last, true});
  }
  for (int m = microbatches - warmup; m < microbatches; ++m) out.push_back({m, last, true});
  return out;
}

namespace {

// The stage of a node's pieces, or -1 for a graph input or a node with pieces in several stages.
int single_stage(const pcg::Node& n, int stages, int devices) {
  if (n.is_graph_input() || !n.view) return -1;
  const std::vector<int>& on = n.view->devices;
  const int first = stage_of_device(on.front(), devices, stages);
  return std::all_of(on.begin(), on.end(), [&](int d) { return stage_of_device(d, devices, stages) == first; }) ? first : -1;
}

}  // namespace

std::vector<int> pipeline_laps(const pcg::Graph& plan, int stages, int devices) {
  std::vector<int> stage(plan.size(), -1);
  for (const pcg::Node& n : plan.nodes()) stage[n.id.index()] = single_stage(n, stages, devices);
  return laps_of_stages(plan, stage);
}

std::vector<int> laps_of_stages(const pcg::Graph& graph, const std::vector<int>& stage) {
  std::vector<int> lap(graph.size(), 0);
  for (const pcg::Node& n : graph.nodes()) {
    for (pcg::PortRef in : n.inputs) {
      const int from = stage[in.node.index()], to = stage[n.id.index()];
      lap[n.id.index()] = std::max(lap[n.id.index()], lap[in.node.index()] + (from >= 0 && to >= 0 && from > to ? 1 : 0));
    }
  }
  return lap;
}

bool runs_in_one_order(const pcg::Graph& plan, int stages, int devices, const std::vector<bool>& takes_gradient) {
  std::vector<int> stage(plan.size(), -1);
  for (const pcg::Node& n : plan.nodes()) {
    stage[n.id.index()] = single_stage(n, stages, devices);
    if (!n.is_graph_input() && n.view && stage[n.id.index()] < 0) return true;
  }
  if (takes_gradient.empty()) return false;
  // A gradient that goes back round a lap: the backward passes of the laps wait on each other.
  for (const pcg::Node& n : plan.nodes())
    for (pcg::PortRef in : n.inputs)
      if (stage[in.node.index()] > stage[n.id.index()] && stage[n.id.index()] >= 0 && takes_gradient[n.id.index()] &&
          takes_gradient[in.node.index()])
        return true;
  return false;
}

namespace {

// Weights and the pieces parallelization operators make of them: what moves once per iteration.
std::vector<bool> weight_traffic(const pcg::Graph& graph, const CostModel& model) {
  std::vector<bool> out(graph.size(), false);
  for (const pcg::Node& n : graph.nodes())
    out[n.id.index()] =
        n.op == pcg::kWeightOp || (!n.is_graph_input() && !model.is_compute(n) && n.inputs.size() == 1 && out[n.inputs[0].node.index()]);
  return out;
}

// As the runtime does, each device adds every micro-batch's gradients into those of the ones whose
// backward ran before it there (the first is kept as it is), once that backward is done and before
// the device's next step: whole gradients of the weights it reads. The weights' sums and updates
// follow the last. `steps`: per stage, per micro-batch, the tasks of each step, which the adds join.
// `weights`: weight_traffic of `micro`.
void add_gradient_accumulation(const pcg::Graph& micro, const CostModel& model, const TaskGraph& one, const Pipeline& pipeline,
                               bool one_order, const std::vector<bool>& weights, const std::vector<std::vector<int>>& copy_of,
                               std::vector<std::vector<std::vector<std::vector<int>>>>& steps, TaskGraph& out) {
  const int stages = pipeline.stages, laps = static_cast<int>(steps.front().front().size()) - 1;
  const std::size_t copies = out.tasks.size();
  std::map<int, int> last_add;  // per device
  // Per micro-batch, per device: the backward tasks there of everything but the weights, which
  // the device's add of that micro-batch's gradients waits for.
  std::vector<std::vector<std::vector<int>>> backward_on(static_cast<std::size_t>(pipeline.microbatches),
                                                         std::vector<std::vector<int>>(static_cast<std::size_t>(out.devices)));
  for (int m = 0; m < pipeline.microbatches; ++m)
    for (int i : copy_of[static_cast<std::size_t>(m)]) {
      if (i < 0) continue;
      const SimTask& t = out.tasks[static_cast<std::size_t>(i)];
      if (t.kind == TaskKind::Compute && t.backward && !weights[t.node.index()] && t.microbatch == m)
        backward_on[static_cast<std::size_t>(m)][static_cast<std::size_t>(t.device)].push_back(i);
    }
  for (const auto& [device, held] : one.gradients_on) {
    double seconds = 0;
    for (pcg::NodeId w : held) seconds += model.gradient_accumulation(micro.node(w).output_shapes[0].dims).seconds;
    const int stage = stage_of_device(device, out.devices, stages);
    std::vector<int> backward_order;
    for (const PipelineStep& step : stage_steps(pipeline.order, one_order ? 0 : stage, stages, pipeline.microbatches, laps))
      if (step.backward) backward_order.push_back(step.microbatch);
    for (std::size_t k = 1; k < backward_order.size(); ++k) {
      const int m = backward_order[k];
      SimTask add;
      add.node = pcg::kNoNode;  // the gradients of every weight the device reads
      add.device = device;
      add.backward = true;
      add.microbatch = m;
      add.seconds = seconds;
      add.label = "gradients added up on " + std::to_string(device);
      add.deps = backward_on[static_cast<std::size_t>(m)][static_cast<std::size_t>(device)];
      std::sort(add.deps.begin(), add.deps.end());
      add.deps.erase(std::unique(add.deps.begin(), add.deps.end()), add.deps.end());
      out.tasks.push_back(std::move(add));
      last_add[device] = static_cast<int>(out.tasks.size()) - 1;
      steps[static_cast<std::size_t>(stage)][static_cast<std::size_t>(m)].back().push_back(last_add[device]);
    }
  }
  for (std::size_t i = 0; i < copies; ++i) {
    SimTask& t = out.tasks[i];
    if (weights[t.node.index()] && t.backward && t.microbatch == pipeline.microbatches - 1)
      if (auto at = last_add.find(t.device); at != last_add.end()) t.deps.push_back(at->second);
  }
}

// As the runtime does once every gradient is summed, the processes sum their micro-batches'
// losses, a number each, as a ring every process blocks in, and only then update their weights.
// `last`: the last micro-batch's copy of each task of `one`.
void sum_losses(const TaskGraph& one, const std::vector<int>& last, const Machine& machine, TaskGraph& out) {
  std::vector<char> is_update(out.tasks.size(), 0);
  std::vector<int> updates;
  for (const auto& [device, update] : one.update_on) {
    const int copy = last[static_cast<std::size_t>(update)];
    if (copy < 0) continue;
    updates.push_back(copy);
    is_update[static_cast<std::size_t>(copy)] = 1;
    out.update_on[device] = copy;
  }
  std::set<int> devices;
  for (const SimTask& t : out.tasks)
    if (t.kind != TaskKind::Join) devices.insert(t.device);
  if (devices.size() < 2) return;
  // The sum starts once every process has done all but its update.
  std::vector<int> before;
  for (std::size_t i = 0; i < out.tasks.size(); ++i)
    if (out.tasks[i].kind != TaskKind::Join && !is_update[i]) before.push_back(static_cast<int>(i));
  const int ready = add_join(out, pcg::kNoNode, std::move(before), "losses ready");
  const int summed = add_ring_allreduce(
      out, machine, {pcg::kNoNode, std::vector<int>(devices.begin(), devices.end()), kBytesPerLossShare, RingSum::Blocking}, ready,
      "losses summed", "losses summed");
  for (int u : updates) out.tasks[static_cast<std::size_t>(u)].deps = {summed};
}

// The pipeline's task graph from its plan's micro-batch graph.
TaskGraph pipeline_task_graph_of(const pcg::Graph& micro, const CostModel& model, const Pipeline& pipeline) {
  TaskGraph one = build_task_graph(micro, model, RunWork::EachMicroBatch, GradientSums::AfterThePasses);
  const std::vector<bool> weights = weight_traffic(micro, model);
  const int count = pipeline.microbatches, stages = pipeline.stages;
  const std::size_t n = one.tasks.size();
  // Every micro-batch's copy of a task gets dependencies of its own: the one graph's are kept
  // apart so that copying a task does not copy them too.
  std::vector<std::vector<int>> one_deps(n);
  for (std::size_t i = 0; i < n; ++i) one_deps[i] = std::exchange(one.tasks[i].deps, {});

  TaskGraph out;
  out.devices = one.devices;
  out.ports = one.ports;
  out.drift = one.drift;
  out.pipelined = true;
  out.tasks.reserve(n * static_cast<std::size_t>(count));
  // An operator with pieces in every stage (interlaced) runs each piece as its data arrive, outside
  // the stages' steps: in a step it would wait for a stage that waits for it.
  std::vector<std::set<int>> stages_of(micro.size());
  for (const SimTask& t : one.tasks)
    if (t.kind == TaskKind::Compute) stages_of[t.node.index()].insert(stage_of_device(t.device, out.devices, stages));
  std::vector<std::vector<int>> copy_of(static_cast<std::size_t>(count), std::vector<int>(n, -1));
  const std::vector<int> lap_of = pipeline_laps(micro, stages, out.devices);
  const int laps = 1 + (lap_of.empty() ? 0 : *std::max_element(lap_of.begin(), lap_of.end()));
  // Per stage, per micro-batch, the forward of each lap then the backward: the compute tasks of that step.
  const auto slot = [laps](int lap, bool backward) { return static_cast<std::size_t>(backward ? laps : lap); };
  std::vector<std::vector<std::vector<std::vector<int>>>> steps(
      static_cast<std::size_t>(stages),
      std::vector<std::vector<std::vector<int>>>(static_cast<std::size_t>(count), std::vector<std::vector<int>>(slot(0, true) + 1)));
  for (int m = 0; m < count; ++m) {
    auto& mine = copy_of[static_cast<std::size_t>(m)];
    for (std::size_t i = 0; i < n; ++i) {
      const SimTask& t = one.tasks[i];
      const bool weight = weights[t.node.index()];
      if (weight && !t.backward && m > 0) {  // weights were sent out before the first micro-batch
        mine[i] = copy_of[0][i];
        continue;
      }
      if (weight && t.backward && m + 1 < count) continue;  // gradients are summed after the last
      const std::vector<int>& deps = one_deps[i];
      SimTask copy = t;
      copy.deps.reserve(deps.size());
      for (int d : deps)
        if (mine[static_cast<std::size_t>(d)] >= 0) copy.deps.push_back(mine[static_cast<std::size_t>(d)]);
      if (weight && t.backward)  // the gradient of every micro-batch
        for (int earlier = 0; earlier + 1 < count; ++earlier)
          for (int d : deps)
            if (copy_of[static_cast<std::size_t>(earlier)][static_cast<std::size_t>(d)] >= 0)
              copy.deps.push_back(copy_of[static_cast<std::size_t>(earlier)][static_cast<std::size_t>(d)]);
      copy.microbatch = m;
      out.tasks.push_back(std::move(copy));
      mine[i] = static_cast<int>(out.tasks.size()) - 1;
      const bool interlaced = stages > 1 && static_cast<int>(stages_of[t.node.index()].size()) == stages;
      if (t.kind == TaskKind::Compute && !weight && !interlaced) {
        const int stage = stage_of_device(t.device, out.devices, stages);
        steps[static_cast<std::size_t>(stage)][static_cast<std::size_t>(m)][slot(lap_of[t.node.index()], t.backward)].push_back(mine[i]);
      }
    }
  }

  const bool one_order = runs_in_one_order(micro, stages, out.devices, model.gradient_values(micro));
  add_gradient_accumulation(micro, model, one, pipeline, one_order, weights, copy_of, steps, out);
  sum_losses(one, copy_of.back(), model.machine(), out);

  // 1F1B: a stage starts a step only when its previous step has finished.
  std::vector<char> in_step(out.tasks.size(), 0), has_dependent(out.tasks.size(), 0);
  for (int s = 0; s < stages; ++s) {
    const std::vector<int>* previous = nullptr;
    for (const PipelineStep& step : stage_steps(pipeline.order, one_order ? 0 : s, stages, count, laps)) {
      const std::vector<int>& current =
          steps[static_cast<std::size_t>(s)][static_cast<std::size_t>(step.microbatch)][slot(step.lap, step.backward)];
      if (current.empty()) continue;
      if (previous) {
        for (int t : *previous) in_step[static_cast<std::size_t>(t)] = 1;
        for (int t : *previous)
          for (int d : out.tasks[static_cast<std::size_t>(t)].deps)
            if (in_step[static_cast<std::size_t>(d)]) has_dependent[static_cast<std::size_t>(d)] = 1;
        std::vector<int> last;
        for (int t : *previous)
          if (!has_dependent[static_cast<std::size_t>(t)]) last.push_back(t);
        for (int t : *previous) in_step[static_cast<std::size_t>(t)] = has_dependent[static_cast<std::size_t>(t)] = 0;
        // Only the step's first tasks wait for them: the rest follow those through their data.
        for (int t : current) in_step[static_cast<std::size_t>(t)] = 1;
        std::vector<int> first;
        for (int t : current) {
          const std::vector<int>& deps = out.tasks[static_cast<std::size_t>(t)].deps;
          if (std::none_of(deps.begin(), deps.end(), [&](int d) { return in_step[static_cast<std::size_t>(d)] != 0; })) first.push_back(t);
        }
        for (int t : current) in_step[static_cast<std::size_t>(t)] = 0;
        for (int t : first)
          out.tasks[static_cast<std::size_t>(t)].deps.insert(out.tasks[static_cast<std::size_t>(t)].deps.end(), last.begin(), last.end());
      }
      previous = &current;
    }
  }
  return out;
}

// What each device keeps running the pipeline, from its plan's micro-batch graph.
std::vector<double> pipeline_memory_of(const pcg::Graph& micro, const CostModel& model, const Pipeline& pipeline,
                                       const std::vector<pcg::NodeId>& recomputed, bool activations_only,
                                       std::vector<MemoryStep>* trace = nullptr) {
  const int devices = model.machine().devices();
  const bool one_order = runs_in_one_order(micro, pipeline.stages, devices, model.gradient_values(micro));
  // The laps before the last keep nothing for the backward pass when no gradient goes back round
  // them (the memory model leaves out what no gradient reaches), so a looping pipeline holds what
  // its last lap's order holds.
  std::vector<double> in_flight(static_cast<std::size_t>(devices));
  for (int d = 0; d < devices; ++d)
    in_flight[static_cast<std::size_t>(d)] =
        pipeline.order == PipelineOrder::GPipe
            ? pipeline.microbatches
            : std::min(pipeline.stages - (one_order ? 0 : stage_of_device(d, devices, pipeline.stages)), pipeline.microbatches);
  return plan_memory(micro, model, in_flight, recomputed, activations_only, trace);
}

}  // namespace

TaskGraph build_pipeline_task_graph(const pcg::Graph& plan, const CostModel& model, const Pipeline& pipeline,
                                    const pcg::OpCatalog& catalog) {
  return pipeline_task_graph_of(micro_batch_graph(plan, catalog, pipeline.microbatches), model, pipeline);
}

std::vector<double> pipeline_memory(const pcg::Graph& plan, const CostModel& model, const Pipeline& pipeline, const pcg::OpCatalog& catalog,
                                    const std::vector<pcg::NodeId>& recomputed, bool activations_only, std::vector<MemoryStep>* trace) {
  if (!pipeline.runs_micro_batches()) return plan_memory(plan, model, {}, recomputed, activations_only, trace);
  return pipeline_memory_of(micro_batch_graph(plan, catalog, pipeline.microbatches), model, pipeline, recomputed, activations_only, trace);
}

namespace {

// Stages cut at `cuts`: the nodes other than graph inputs, in creation order, stage s running from
// position cuts[s - 1] (0 for the first) to cuts[s] (the last: to the end).
std::vector<int> stages_at(const pcg::Graph& graph, const std::vector<std::size_t>& cuts) {
  std::vector<int> out(graph.size(), -1);
  std::size_t position = 0, stage = 0;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.is_graph_input()) continue;
    while (stage < cuts.size() && position >= cuts[stage]) ++stage;
    out[n.id.index()] = static_cast<int>(stage);
    ++position;
  }
  return out;
}

// Where consecutive stages meet, as stages_at takes them.
std::vector<std::size_t> cuts_of(const pcg::Graph& graph, const std::vector<int>& stage_of) {
  std::vector<std::size_t> cuts;
  std::size_t position = 0;
  int stage = 0;
  for (const pcg::Node& n : graph.nodes()) {
    if (n.is_graph_input()) continue;
    for (; stage < stage_of[n.id.index()]; ++stage) cuts.push_back(position);
    ++position;
  }
  return cuts;
}

// The stages' placements with the operators that share a weight across stages interlaced: a
// weight read in more than one stage (an embedding table and the LM head tied to it), directly
// or through operators reading weights alone, has every such reader cut into pieces in every
// stage (on every device where the dimension divides so, else on as many of each stage's first
// devices as it takes), along the longest dimension of the input the weight reaches it by, as
// SuperScaler shares mBART's embedding across its pipeline. The weight is then held once,
// cut, instead of whole in each stage that reads it. Nothing when no weight is read in two stages,
// or a reader cannot be cut so.
std::optional<std::vector<Placement>> interlaced_placements(const spec::Library& library, const pcg::Graph& graph,
                                                            const std::vector<int>& stage_of, std::vector<Placement> placements, int stages,
                                                            int devices) {
  std::vector<bool> of_weights(graph.size(), false);  // a weight, or computed from weights alone
  for (const pcg::Node& n : graph.nodes())
    of_weights[n.id.index()] = n.op == pcg::kWeightOp || (!n.is_graph_input() && !n.inputs.empty() &&
                                                          std::all_of(n.inputs.begin(), n.inputs.end(),
                                                                      [&](pcg::PortRef in) { return of_weights[in.node.index()]; }));
  std::vector<int> reached_by(graph.size(), -1);  // per interlaced operator: the input a shared weight reaches it by
  for (const pcg::Node& w : graph.nodes()) {
    if (w.op != pcg::kWeightOp) continue;
    std::vector<std::pair<pcg::NodeId, int>> readers;  // (operator, input)
    std::set<int> stages_reading;
    std::vector<pcg::NodeId> todo{w.id};
    while (!todo.empty()) {
      const pcg::NodeId at = todo.back();
      todo.pop_back();
      for (std::size_t port = 0; port < graph.node(at).output_shapes.size(); ++port)
        for (const pcg::Use& use : graph.uses({at, static_cast<int>(port)})) {
          if (!is_compute_node(library, graph.node(use.node))) continue;
          readers.push_back({use.node, use.input});
          stages_reading.insert(stage_of[use.node.index()]);
          if (of_weights[use.node.index()]) todo.push_back(use.node);
        }
    }
    if (stages_reading.size() > 1)
      for (const auto& [reader, input] : readers) reached_by[reader.index()] = input;
  }
  const int per_stage = devices / stages;
  bool any = false;
  for (const pcg::Node& n : graph.nodes()) {
    const int input = reached_by[n.id.index()];
    if (input < 0) continue;
    const std::vector<std::int64_t>& dims = graph.shape_of(n.inputs[static_cast<std::size_t>(input)]).dims;
    if (dims.empty()) return std::nullopt;
    const auto longest = static_cast<std::size_t>(std::max_element(dims.begin(), dims.end()) - dims.begin());
    // The most pieces the dimension takes: `each` on the first devices of every stage.
    std::optional<Placement> cut;
    for (int each = per_stage; each >= 1 && !cut; --each) {
      if (per_stage % each != 0) continue;
      auto c = split_config(library, graph, n, static_cast<std::size_t>(input), longest, {static_cast<std::int64_t>(stages) * each});
      if (!c) continue;
      std::vector<int> on;
      for (int s = 0; s < stages; ++s)
        for (int k = 0; k < each; ++k) on.push_back(s * per_stage + k);
      cut = Placement{std::move(*c), 0, std::move(on)};
    }
    if (!cut) return std::nullopt;
    placements[n.id.index()] = std::move(*cut);
    any = true;
  }
  if (!any) return std::nullopt;
  return placements;
}

// A pipeline of given stages at its best count of micro-batches: the fastest that fits, else how
// far the fullest device of the closest is over its memory.
struct StagesTried {
  PipelineResult result;
  double overflow_bytes = std::numeric_limits<double>::infinity();
  bool better_than(const StagesTried& other) const {
    if (result.seconds != other.result.seconds) return result.seconds < other.result.seconds;
    return overflow_bytes < other.overflow_bytes;
  }
};

}  // namespace

PipelineResult pipeline_search(const spec::Library& library, const pcg::Graph& graph, const CostModel& model,
                               const PipelineOptions& options) {
  const int devices = model.machine().devices();
  std::vector<int> stage_counts = options.stage_counts;
  if (stage_counts.empty())
    for (int s = 2; s <= std::min(8, devices); ++s)
      if (devices % s == 0) stage_counts.push_back(s);
  const std::size_t operators = graph.operator_count();

  // Why the pipelines tried were not taken, the most telling last.
  std::string shape_problem, batch_problem;
  bool priced = false;
  const auto try_stages = [&](const std::vector<int>& stage_of, int stages) {
    StagesTried tried;
    std::vector<std::vector<Placement>> layouts{pipeline_placements(library, graph, stage_of, stages, devices)};
    if (auto interlaced = interlaced_placements(library, graph, stage_of, layouts.front(), stages, devices))
      layouts.push_back(std::move(*interlaced));
    for (const std::vector<Placement>& placements : layouts) {
      pcg::Graph plan;
      try {
        plan = materialize(graph, placements, library, model.moves());
      } catch (const LoomError&) {
        continue;
      }
      for (int per_stage : options.microbatches_per_stage) {
        const Pipeline pipeline{stages, stages * per_stage};
        // Memory first: a pipeline that does not fit is not simulated.
        pcg::Graph micro;
        std::vector<double> bytes;
        try {
          micro = micro_batch_graph(plan, library, pipeline.microbatches);
          bytes = pipeline_memory_of(micro, model, pipeline, {}, false);
        } catch (const LoomError& e) {
          if (batch_problem.empty()) batch_problem = std::string("the batch cannot be cut into micro-batches: ") + e.what();
          continue;
        }
        priced = true;
        if (first_overfull_device(bytes, model.machine()) >= 0) {
          tried.overflow_bytes = std::min(tried.overflow_bytes, fullest_device_bytes(bytes) - model.machine().device.memory_bytes);
          continue;
        }
        double seconds = 0;
        try {
          seconds = simulate(pipeline_task_graph_of(micro, model, pipeline)).makespan;
        } catch (const LoomError& e) {
          if (batch_problem.empty()) batch_problem = std::string("the pipeline cannot be simulated: ") + e.what();
          continue;
        }
        if (seconds >= tried.result.seconds) continue;
        tried.result.pipeline = pipeline;
        tried.result.placements = placements;
        tried.result.plan = plan;
        tried.result.seconds = seconds;
        tried.result.interlaced = &placements != &layouts.front();
      }
    }
    tried.result.stage_sizes.assign(static_cast<std::size_t>(stages), 0);
    for (int s : stage_of)
      if (s >= 0) ++tried.result.stage_sizes[static_cast<std::size_t>(s)];
    return tried;
  };

  // Every count of stages at stages of equal compute first.
  struct Balanced {
    int stages;
    std::vector<int> stage_of;
    StagesTried tried;
  };
  std::vector<Balanced> balanced;
  std::vector<StagesTried> looped;
  double best_balanced = std::numeric_limits<double>::infinity();
  for (int stages : stage_counts) {
    if (stages < 2 || devices % stages != 0) continue;
    if (static_cast<std::size_t>(stages) > operators) {
      shape_problem = "the graph has " + std::to_string(operators) + " operators, too few for " + std::to_string(stages) + " stages";
      continue;
    }
    std::vector<int> stage_of = balanced_stages(graph, model, stages);
    std::vector<bool> used(static_cast<std::size_t>(stages), false);
    for (int s : stage_of)
      if (s >= 0) used[static_cast<std::size_t>(s)] = true;
    if (std::find(used.begin(), used.end(), false) != used.end()) {
      shape_problem = "an operator is too heavy to share the work out among " + std::to_string(stages) + " stages";
      continue;
    }
    StagesTried tried = try_stages(stage_of, stages);
    best_balanced = std::min(best_balanced, tried.result.seconds);
    balanced.push_back({stages, std::move(stage_of), std::move(tried)});
    // A graph that runs its layers again on their weights also goes round the stages, each stage
    // holding its layers' weights once (SuperScaler's 3F1B for AlphaFold2's recycling).
    if (const std::vector<int> looping = looping_stages(graph, model, stages); !looping.empty()) {
      StagesTried round = try_stages(looping, stages);
      best_balanced = std::min(best_balanced, round.result.seconds);
      round.result.looping = true;
      looped.push_back(std::move(round));
    }
  }

  StagesTried best;
  for (StagesTried& round : looped)
    if (round.better_than(best)) best = std::move(round);
  for (Balanced& b : balanced) {
    const int stages = b.stages;
    StagesTried here = std::move(b.tried);
    // From stages of equal compute, move each boundary while that pays: under 1F1B the first
    // stages hold more micro-batches, so stages of unequal work can fit or run faster. Only the
    // counts of stages that run near the best at equal stages, or that do not fit yet, are worth it.
    const bool worth_moving =
        !options.bounded || !std::isfinite(here.result.seconds) || here.result.seconds <= options.moved_within * best_balanced;
    std::vector<std::size_t> cuts = cuts_of(graph, b.stage_of);
    std::set<std::vector<int>> priced_stages{b.stage_of};
    std::size_t step = std::max<std::size_t>(1, operators / (4 * static_cast<std::size_t>(stages)));
    std::size_t moves_left = worth_moving ? options.boundary_moves : 0;
    while (step > 0 && moves_left > 0) {
      bool moved = false;
      for (std::size_t i = 0; i < cuts.size() && moves_left > 0; ++i)
        for (const bool later : {false, true}) {
          const std::size_t low = i == 0 ? 1 : cuts[i - 1] + 1, high = i + 1 < cuts.size() ? cuts[i + 1] - 1 : operators - 1;
          if (later ? cuts[i] + step > high : cuts[i] < low + step) continue;
          if (moves_left == 0) break;
          --moves_left;
          std::vector<std::size_t> moved_cuts = cuts;
          moved_cuts[i] = later ? cuts[i] + step : cuts[i] - step;
          std::vector<int> moved_stages = stages_at(graph, moved_cuts);
          // Stages priced before lost then to stages no better than those kept now: the kept
          // stages only get faster (or closer to fitting).
          if (!priced_stages.insert(moved_stages).second) continue;
          StagesTried t = try_stages(moved_stages, stages);
          if (!t.better_than(here)) continue;
          here = std::move(t);
          cuts = std::move(moved_cuts);
          moved = true;
          break;  // moving it back would give the stages just left
        }
      if (!moved) step /= 2;
    }
    if (here.better_than(best)) best = std::move(here);
  }
  if (std::isfinite(best.result.seconds)) return best.result;
  PipelineResult none;
  if (priced)
    none.none_because = "every pipeline tried needs more memory than its devices have";
  else if (!batch_problem.empty())
    none.none_because = batch_problem;
  else if (!shape_problem.empty())
    none.none_because = shape_problem;
  else
    none.none_because = "no count of stages from 2 to 8 divides the machine's " + std::to_string(devices) + " devices";
  return none;
}

}  // namespace loom::search
