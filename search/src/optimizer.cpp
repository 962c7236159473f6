#include "loom/search/optimizer.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <iomanip>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/run_concurrently.hpp"
#include "loom/search/coshard.hpp"
#include "loom/search/memory.hpp"
#include "loom/search/plan_cost.hpp"
#include "loom/search/plan_simulation.hpp"

namespace loom::search {
namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

struct Candidate {
  std::string name;
  pcg::Graph graph;
  std::vector<Placement> placements;
  std::vector<AppliedSubstitution> substitutions;
  double seconds = std::numeric_limits<double>::infinity();
  Pipeline pipeline;
};

// e.g. "16.0 GiB", "19.5 MiB" (`digits` after the point): GiB from one GiB up, MiB below.
std::string memory_text(double bytes, int digits = 1) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits);
  if (bytes >= (1 << 30))
    os << bytes / (1 << 30) << " GiB";
  else
    os << bytes / (1 << 20) << " MiB";
  return os.str();
}

// Why no plan was returned: what the joint plan needs of its fullest device, and the least that a plan
// tried with recomputation needs (infinite when none was tried), co-sharded too where `coshard_tried`.
std::string nothing_fits(const spec::Library& library, const pcg::Graph& graph, const std::vector<Placement>& placements,
                         const CostModel& model, double least_recomputing, bool coshard_tried) {
  const Machine& m = model.machine();
  std::ostringstream os;
  os << "no plan found fits on " << m.name << " (" << m.devices() << " devices of " << memory_text(m.device.memory_bytes) << ")";
  try {
    const std::vector<double> bytes = plan_memory(materialize(graph, placements, library, model.moves()), model);
    os << ": the best plan searched needs " << memory_text(fullest_device_bytes(bytes)) << " on its fullest device";
  } catch (const LoomError&) {
    // the need cannot be told: the message stays without it
  }
  if (std::isfinite(least_recomputing))
    os << "; with recomputation" << (coshard_tried ? " and co-shard" : " (co-shard not tried: --no-coshard)")
       << ", the smallest plan tried needs " << memory_text(least_recomputing, 2);
  os << "; try more --nodes or a smaller --batch";
  return os.str();
}

// The operators whose outputs are the graph's outputs, directly or through layout changes (the
// nodes `compute` does not take) of one input each.
std::set<pcg::NodeId> output_makers(const pcg::Graph& graph, const std::function<bool(const pcg::Node&)>& compute) {
  std::set<pcg::NodeId> out;
  for (pcg::PortRef o : graph.outputs()) {
    const pcg::Node* n = &graph.node(o.node);
    while (!compute(*n) && !n->is_graph_input() && n->inputs.size() == 1) n = &graph.node(n->inputs.front().node);
    if (compute(*n)) out.insert(n->id);
  }
  return out;
}

}  // namespace

OptimizeReport optimize(const spec::Library& library, const pcg::Graph& graph, const std::vector<pcg::Rule>& rules, const CostModel& model,
                        const OptimizeSettings& settings, const std::function<void(const OptimizeProgress&)>& progress) {
  const auto began = std::chrono::steady_clock::now();
  OptimizeReport report;
  // Each stage's clock runs from its announcement to the next one's (or the end), except for the
  // stages that run alongside each other, which are timed as they run.
  auto stage_began = began;
  bool stage_open = false;
  auto close_stage = [&] {
    const auto now = std::chrono::steady_clock::now();
    if (stage_open) report.stages.back().seconds = std::chrono::duration<double>(now - stage_began).count();
    stage_open = false;
    stage_began = now;
  };
  auto report_stage = [&](const std::string& stage) {
    close_stage();
    report.stages.push_back({stage, 0});
    stage_open = true;
    if (progress) progress({stage, {}});
  };
  report_stage("single-device cost");
  {
    const Machine one = model.machine().with_nodes(1).with_devices_per_node(1);
    const CostModel single = model.on(one);
    report.initial_seconds = placement_seconds(library, graph, unsplit_placements(graph), single);
  }

  // Work run at once (settings.jobs) costs on the calling thread with `model`, on each other
  // thread with a model of its own, since a model's cache of layout moves is not shared between
  // threads; where tasks are measured, all runs on one thread.
  const int jobs = model.measures() ? 1 : settings.jobs;
  const std::thread::id caller = std::this_thread::get_id();
  auto own_model = [&] { return std::this_thread::get_id() == caller ? nullptr : std::make_unique<CostModel>(model.for_another_thread()); };
  struct Span {
    std::chrono::steady_clock::time_point began, ended;
    double seconds() const { return std::chrono::duration<double>(ended - began).count(); }
  };

  report_stage("joint search");
  // The sequential baseline's rewriting on one device (TASO's stage) waits on nothing: with more
  // than one job it runs beside the joint search, whose segments take `jobs` threads too (the
  // rewriting is the shorter, and a segment's search gains more from a thread than it loses).
  const bool rewrite_beside = settings.baselines && jobs > 1;
  SearchResult sequentially_rewritten;
  std::array<Span, 2> first_spans;
  pcg::run_concurrently(rewrite_beside ? 2 : 1, rewrite_beside ? 2 : 1, own_model,
                        [&](const std::unique_ptr<CostModel>& own, std::size_t i) {
                          first_spans[i].began = std::chrono::steady_clock::now();
                          if (i == 0) {
                            const CostModel& costs = own ? *own : model;
                            JointOptions joint = settings.joint;
                            joint.jobs = jobs;
                            report.joint = joint_search(library, graph, rules, costs, joint, [&](const JointProgress& p) {
                              if (progress) progress({"joint search", p});
                            });
                            report.search_seconds = since(first_spans[0].began);
                            report.joint_seconds = placement_seconds(library, report.joint.graph, report.joint.placements, costs);
                          } else {
                            sequentially_rewritten = sequential_rewrite(library, graph, rules, model, settings.joint.substitution);
                          }
                          first_spans[i].ended = std::chrono::steady_clock::now();
                        });
  close_stage();
  if (rewrite_beside) {
    report.stages.back().seconds = first_spans[0].seconds();
    report.stages.push_back({"baseline: sequential, rewriting", first_spans[1].seconds(), true});
  }
  Candidate best{"joint", report.joint.graph, report.joint.placements, report.joint.sequence, report.joint_seconds, {}};
  report.refined_seconds = report.joint_seconds;
  std::vector<Candidate> tried{best};  // every plan the searches made, for recomputation when none fits

  // FlexFlow's simulator-driven local search from the DP's plan: the DP's objective adds times
  // where the simulator overlaps them, so a few moves judged by the simulator can still pay. For
  // the same reason the DP's plan can lose to plain data parallelism over the graph it chose, and
  // a short walk depends much on where it starts: a second walk starts from data parallelism.
  // The two walks, the pipeline search and, over a graph the joint search rewrote, FlexFlow's
  // walk wait on nothing but the joint search, so they run at once where settings.jobs allows;
  // their results are taken in the same order either way.
  report.refinement_start = "none";
  std::vector<std::pair<std::string, std::vector<Placement>>> starts;
  if (settings.mcmc_iterations > 0)
    starts = {{"joint", best.placements}, {"data_parallel", data_parallel(library, best.graph, model.machine())}};
  McmcOptions refine;
  refine.iterations = settings.mcmc_iterations;
  refine.max_seconds = settings.mcmc_seconds / 2;  // the two walks share one walk's time bound
  refine.seed = settings.seed;
  McmcOptions flexflow_walk;
  flexflow_walk.iterations = settings.mcmc_iterations;
  flexflow_walk.max_seconds = settings.mcmc_seconds;
  flexflow_walk.seed = settings.seed;
  std::vector<McmcResult> walks(starts.size());
  std::optional<McmcResult> flexflow;
  PipelineResult piped;
  struct Task {
    std::string stage;
    std::function<void(const CostModel&)> run;
  };
  std::vector<Task> group;
  for (std::size_t i = 0; i < starts.size(); ++i)
    group.push_back({"refining the joint plan", [&, i](const CostModel& costs) {
                       McmcOptions walk = refine;
                       walk.initial = starts[i].second;
                       walks[i] = mcmc_search(library, best.graph, costs, walk);
                     }});
  if (settings.pipeline)
    group.push_back({"pipeline parallelism",
                     [&](const CostModel& costs) { piped = pipeline_search(library, best.graph, costs, settings.pipeline_options); }});
  // Over the graph as given, FlexFlow's walk repeats the refining walk from data parallelism when
  // the joint search rewrote nothing, and then waits for it (below).
  if (settings.baselines && report.joint.graph != graph)
    group.push_back(
        {"baseline: flexflow_mcmc", [&](const CostModel& costs) { flexflow = mcmc_search(library, graph, costs, flexflow_walk); }});
  SequentialOptions sequential;
  sequential.substitution = settings.joint.substitution;
  sequential.mcmc = flexflow_walk;
  if (rewrite_beside) sequential.rewritten = &sequentially_rewritten;
  // Over a graph no other walk walks, the sequential baseline's walk waits on nothing either.
  std::unique_ptr<SequentialResult> sequential_result;
  if (rewrite_beside && sequentially_rewritten.best != graph && sequentially_rewritten.best != report.joint.graph)
    group.push_back({"baseline: sequential", [&](const CostModel& costs) {
                       sequential_result =
                           std::make_unique<SequentialResult>(sequential_optimization(library, graph, rules, costs, sequential));
                     }});
  std::vector<std::string> stages;
  for (const Task& t : group)
    if (std::find(stages.begin(), stages.end(), t.stage) == stages.end()) stages.push_back(t.stage);
  if (progress && !stages.empty()) {
    std::string said = stages.front();
    for (std::size_t k = 1; k < stages.size(); ++k) said += (k + 1 == stages.size() ? ", and " : ", ") + stages[k];
    if (stages.size() > 1) said += jobs > 1 ? ", at once" : ", one after another";
    progress({said, {}});
  }
  std::vector<Span> spans(group.size());
  pcg::run_concurrently(jobs, group.size(), own_model, [&](const std::unique_ptr<CostModel>& own, std::size_t i) {
    spans[i].began = std::chrono::steady_clock::now();
    group[i].run(own ? *own : model);
    spans[i].ended = std::chrono::steady_clock::now();
  });
  for (const std::string& stage : stages) {
    std::chrono::steady_clock::time_point from = std::chrono::steady_clock::time_point::max(), to{};
    for (std::size_t i = 0; i < group.size(); ++i)
      if (group[i].stage == stage) {
        from = std::min(from, spans[i].began);
        to = std::max(to, spans[i].ended);
      }
    report.stages.push_back({stage, std::chrono::duration<double>(to - from).count(), stage != stages.front() && jobs > 1});
  }

  std::optional<McmcResult> walked_from_data_parallel;  // over the joint graph
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const McmcResult& r = walks[i];
    const std::string& start = starts[i].first;
    if (start == "data_parallel") walked_from_data_parallel = r;
    if (r.seconds < best.seconds) {
      best.placements = r.placements;
      best.seconds = report.refined_seconds = r.seconds;
      best.name = start == "joint" ? "joint+mcmc" : "joint+data_parallel+mcmc";
      report.refinement_start = start;
    }
  }

  report.pipeline_seconds = std::numeric_limits<double>::infinity();
  if (settings.pipeline) {
    report.pipeline_seconds = piped.seconds;
    report.pipeline_none_because = piped.none_because;
    report.pipeline_stage_sizes = piped.stage_sizes;
    report.pipeline_interlaced = piped.interlaced;
    report.pipeline_looping = piped.looping;
    if (!piped.placements.empty())
      tried.push_back({"pipeline", best.graph, piped.placements, best.substitutions, piped.seconds, piped.pipeline});
    if (piped.seconds < best.seconds)
      best = {"pipeline", best.graph, std::move(piped.placements), best.substitutions, piped.seconds, piped.pipeline};
  }

  if (settings.baselines) {
    std::vector<Candidate> others;
    report_stage("baseline: data_parallel");
    others.push_back({"data_parallel", graph, data_parallel(library, graph, model.machine()), {}, 0, {}});
    others.back().seconds = placement_seconds(library, graph, others.back().placements, model);
    report_stage("baseline: expert");
    others.push_back({"expert", graph, expert_strategy(library, graph, model.machine()), {}, 0, {}});
    others.back().seconds = placement_seconds(library, graph, others.back().placements, model);
    if (!flexflow) {
      report_stage("baseline: flexflow_mcmc");
      // From data parallelism with the same seed, FlexFlow's walk is the refining walk step for
      // step: it goes on from where that walk's tighter time bound stopped it, if it did.
      if (walked_from_data_parallel) flexflow_walk.resume = &*walked_from_data_parallel;
      flexflow = mcmc_search(library, graph, model, flexflow_walk);
    }
    others.push_back({"flexflow_mcmc", graph, flexflow->placements, {}, flexflow->seconds, {}});
    if (!sequential_result) {
      report_stage("baseline: sequential");
      sequential.mcmc.resume = nullptr;
      sequential.walked.emplace_back(graph, std::move(*flexflow));
      if (walked_from_data_parallel) sequential.walked.emplace_back(report.joint.graph, *walked_from_data_parallel);
      sequential_result = std::make_unique<SequentialResult>(sequential_optimization(library, graph, rules, model, sequential));
    }
    SequentialResult& s = *sequential_result;
    others.push_back({"sequential", std::move(s.graph), std::move(s.placements), std::move(s.substitutions), s.seconds, {}});
    for (Candidate& c : others) {
      tried.push_back(c);
      report.baselines[c.name] = c.seconds;
      if (c.seconds < best.seconds) best = c;
    }
  }
  std::vector<pcg::NodeId> recompute;
  // The least any plan tried with recomputation (and co-shard) needs of its fullest device.
  double least_needed = std::numeric_limits<double>::infinity();
  // Each plan tried again with activation checkpoints: every k-th operator is kept as a checkpoint,
  // the operators between two are recomputed together (fewer checkpoints hold less, more recompute
  // less). Co-sharded, a plan also tries keeping the last operator alone: its regions compute
  // again one piece at a time. And selectively, as Megatron-LM and SuperScaler recompute
  // attention: only the operators that run no contraction or convolution (softmax, dropout,
  // activations, normalizations: large outputs, cheap to compute again). The fastest that fits
  // replaces `best`.
  const auto checkpointed = [&](const Candidate& c, const std::vector<Placement>& placements, const std::string& how, bool coshard) {
    Plan plan;
    try {
      plan.graph = materialize(c.graph, placements, library, model.moves());
    } catch (const LoomError&) {
      return;  // a plan that cannot be laid out is no candidate
    }
    plan.pipeline = c.pipeline;
    std::vector<pcg::NodeId> compute, cheap;
    for (const pcg::Node& n : plan.graph.nodes()) {
      if (!model.is_compute(n)) continue;
      compute.push_back(n.id);
      std::vector<pcg::ParallelShape> inputs;
      for (const pcg::PortRef& in : n.inputs) inputs.push_back(plan.graph.shape_of(in));
      const pcg::KernelShape shape = library.task_cost(n.op, n.attrs, inputs).shape;
      if (shape != pcg::KernelShape::Contraction && shape != pcg::KernelShape::Convolution) cheap.push_back(n.id);
    }
    const auto root = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(compute.size()))));
    std::set<std::size_t> keep{2, 3, std::max<std::size_t>(root, 2)};
    if (coshard) keep.insert(std::max<std::size_t>(compute.size(), 2));
    std::vector<std::vector<pcg::NodeId>> choices;
    for (std::size_t keep_every : keep) {
      choices.emplace_back();
      for (std::size_t i = 0; i < compute.size(); ++i)
        if (i % keep_every != keep_every - 1) choices.back().push_back(compute[i]);
    }
    if (!cheap.empty() && cheap.size() < compute.size()) choices.push_back(std::move(cheap));
    if (coshard) {
      // A co-sharded region computes again piece by piece only where what is read from outside it
      // is kept (piecewise_regions): each choice is tried again keeping the operators that make the
      // graph's outputs, which their gathers read.
      const std::set<pcg::NodeId> outputs = output_makers(plan.graph, [&model](const pcg::Node& n) { return model.is_compute(n); });
      const std::size_t spaced = choices.size();
      for (std::size_t k = 0; k < spaced; ++k) {
        std::vector<pcg::NodeId> kept_outputs;
        for (pcg::NodeId id : choices[k])
          if (!outputs.count(id)) kept_outputs.push_back(id);
        if (kept_outputs.size() < choices[k].size()) choices.push_back(std::move(kept_outputs));
      }
    }
    for (std::vector<pcg::NodeId>& choice : choices) {
      plan.recompute = std::move(choice);
      PlanCost cost;
      try {
        cost = simulated_plan_cost(plan, model, library);
      } catch (const LoomError&) {
        continue;  // e.g. a finer cut that its micro-batches do not divide
      }
      least_needed = std::min(least_needed, cost.fullest_bytes);
      if (cost.fits() && cost.seconds < best.seconds) {
        best = c;
        best.placements = placements;
        best.name = c.name + how;
        best.seconds = cost.seconds;
        recompute = plan.recompute;
      }
    }
  };
  if (!std::isfinite(best.seconds) && settings.recompute) {
    report_stage("recomputation");
    for (const Candidate& c : tried) checkpointed(c, c.placements, "+recompute", false);
  }
  // Co-shard, as SuperScaler pairs it with recomputation: each operator cut into 2 or 4 times as
  // many pieces on the same devices, so that the backward pass computes again and holds one piece
  // of the dropped values at a time.
  const bool coshard_tried = !std::isfinite(best.seconds) && settings.recompute && settings.coshard;
  if (coshard_tried) {
    report_stage("co-shard");
    for (const Candidate& c : tried)
      for (int pieces_per_device : {2, 4}) {
        std::size_t coshards = 0;
        const std::vector<Placement> placements = coshard_placements(library, c.graph, c.placements, pieces_per_device, &coshards);
        if (coshards == 0) continue;
        const double before = best.seconds;
        checkpointed(c, placements, "+coshard+recompute", true);
        if (best.seconds < before) report.coshard = {pieces_per_device, coshards};
      }
  }
  if (!std::isfinite(best.seconds)) throw LoomError(nothing_fits(library, best.graph, best.placements, model, least_needed, coshard_tried));
  report.graph = std::move(best.graph);
  report.placements = std::move(best.placements);
  report_stage("materializing the plan");
  report.plan = materialize(report.graph, report.placements, library, model.moves());
  report.best_seconds = best.seconds;
  report.chosen = best.name;
  report.pipeline = best.pipeline;
  report.recompute = std::move(recompute);
  report.substitutions = std::move(best.substitutions);
  close_stage();
  report.total_seconds = since(began);
  return report;
}

}  // namespace loom::search
