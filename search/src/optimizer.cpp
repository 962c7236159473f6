#include "loom/search/optimizer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <optional>
#include <set>
#include <sstream>

#include "loom/pcg/diagnostic.hpp"
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

// Why no plan was returned: what the joint plan needs of its fullest device.
std::string nothing_fits(const spec::Library& library, const pcg::Graph& graph, const std::vector<Placement>& placements,
                         const CostModel& model) {
  const Machine& m = model.machine();
  std::ostringstream os;
  os << "no plan found fits on " << m.name << " (" << m.devices() << " devices of " << m.device.memory_bytes / (1 << 30) << " GiB)";
  try {
    const std::vector<double> bytes = plan_memory(materialize(graph, placements, library, model.moves()), model);
    os << ": the best plan searched needs " << std::fixed << std::setprecision(1)
       << *std::max_element(bytes.begin(), bytes.end()) / (1 << 30) << " GiB on its fullest device";
  } catch (const LoomError&) {
    // the need cannot be told: the message stays without it
  }
  os << "; try more --nodes or a smaller --batch";
  return os.str();
}

}  // namespace

OptimizeReport optimize(const spec::Library& library, const pcg::Graph& graph, const std::vector<pcg::Rule>& rules, const CostModel& model,
                        const OptimizeSettings& settings, const std::function<void(const OptimizeProgress&)>& progress) {
  const auto began = std::chrono::steady_clock::now();
  OptimizeReport report;
  // Each stage's clock runs from its announcement to the next one's (or the end).
  auto stage_began = began;
  auto close_stage = [&] {
    const auto now = std::chrono::steady_clock::now();
    if (!report.stages.empty()) report.stages.back().seconds = std::chrono::duration<double>(now - stage_began).count();
    stage_began = now;
  };
  auto report_stage = [&](const std::string& stage) {
    close_stage();
    report.stages.push_back({stage, 0});
    if (progress) progress({stage, {}});
  };
  report_stage("single-device cost");
  {
    const Machine one = model.machine().with_nodes(1).with_devices_per_node(1);
    const CostModel single = model.on(one);
    report.initial_seconds = placement_seconds(library, graph, unsplit_placements(graph), single);
  }

  report_stage("joint search");
  const auto joint_began = std::chrono::steady_clock::now();
  report.joint = joint_search(library, graph, rules, model, settings.joint, [&](const JointProgress& p) {
    if (progress) progress({"joint search", p});
  });
  report.search_seconds = since(joint_began);
  Candidate best{"joint", report.joint.graph, report.joint.placements, report.joint.sequence, 0, {}};
  best.seconds = report.joint_seconds = report.refined_seconds = placement_seconds(library, best.graph, best.placements, model);
  std::vector<Candidate> tried{best};  // every plan the searches made, for recomputation when none fits

  // FlexFlow's simulator-driven local search from the DP's plan: the DP's objective adds times
  // where the simulator overlaps them, so a few moves judged by the simulator can still pay. For
  // the same reason the DP's plan can lose to plain data parallelism over the graph it chose, and
  // a short walk depends much on where it starts: a second walk starts from data parallelism.
  report.refinement_start = "none";
  std::optional<McmcResult> walked_from_data_parallel;  // over the joint graph
  if (settings.mcmc_iterations > 0) {
    report_stage("refining the joint plan");
    McmcOptions refine;
    refine.iterations = settings.mcmc_iterations;
    refine.max_seconds = settings.mcmc_seconds / 2;  // the two walks share one walk's time bound
    refine.seed = settings.seed;
    const std::vector<std::pair<std::string, std::vector<Placement>>> starts{
        {"joint", best.placements}, {"data_parallel", data_parallel(library, best.graph, model.machine())}};
    for (const auto& [start, placements] : starts) {
      refine.initial = placements;
      const McmcResult r = mcmc_search(library, best.graph, model, refine);
      if (start == "data_parallel") walked_from_data_parallel = r;
      if (r.seconds < best.seconds) {
        best.placements = r.placements;
        best.seconds = report.refined_seconds = r.seconds;
        best.name = start == "joint" ? "joint+mcmc" : "joint+data_parallel+mcmc";
        report.refinement_start = start;
      }
    }
  }

  report.pipeline_seconds = std::numeric_limits<double>::infinity();
  if (settings.pipeline) {
    report_stage("pipeline parallelism");
    PipelineResult p = pipeline_search(library, best.graph, model, settings.pipeline_options);
    report.pipeline_seconds = p.seconds;
    report.pipeline_none_because = p.none_because;
    report.pipeline_stage_sizes = p.stage_sizes;
    if (!p.placements.empty()) tried.push_back({"pipeline", best.graph, p.placements, best.substitutions, p.seconds, p.pipeline});
    if (p.seconds < best.seconds) best = {"pipeline", best.graph, std::move(p.placements), best.substitutions, p.seconds, p.pipeline};
  }

  if (settings.baselines) {
    std::vector<Candidate> others;
    report_stage("baseline: data_parallel");
    others.push_back({"data_parallel", graph, data_parallel(library, graph, model.machine()), {}, 0, {}});
    others.back().seconds = placement_seconds(library, graph, others.back().placements, model);
    report_stage("baseline: expert");
    others.push_back({"expert", graph, expert_strategy(library, graph, model.machine()), {}, 0, {}});
    others.back().seconds = placement_seconds(library, graph, others.back().placements, model);
    report_stage("baseline: flexflow_mcmc");
    McmcOptions mcmc;
    mcmc.iterations = settings.mcmc_iterations;
    mcmc.max_seconds = settings.mcmc_seconds;
    mcmc.seed = settings.seed;
    // Over the graph as given, from data parallelism with the same seed, FlexFlow's walk repeats
    // the refining walk step for step when the joint search rewrote nothing: it goes on from where
    // that walk's tighter time bound stopped it, if it did.
    McmcOptions flexflow_walk = mcmc;
    if (walked_from_data_parallel && report.joint.graph == graph) flexflow_walk.resume = &*walked_from_data_parallel;
    McmcResult flexflow = mcmc_search(library, graph, model, flexflow_walk);
    others.push_back({"flexflow_mcmc", graph, flexflow.placements, {}, flexflow.seconds, {}});
    report_stage("baseline: sequential");
    SequentialOptions seq;
    seq.substitution = settings.joint.substitution;
    seq.mcmc = mcmc;
    seq.walked.emplace_back(graph, std::move(flexflow));
    if (walked_from_data_parallel) seq.walked.emplace_back(report.joint.graph, *walked_from_data_parallel);
    SequentialResult s = sequential_optimization(library, graph, rules, model, seq);
    others.push_back({"sequential", std::move(s.graph), std::move(s.placements), std::move(s.substitutions), s.seconds, {}});
    for (Candidate& c : others) {
      tried.push_back(c);
      report.baselines[c.name] = c.seconds;
      if (c.seconds < best.seconds) best = c;
    }
  }
  std::vector<pcg::NodeId> recompute;
  if (!std::isfinite(best.seconds) && settings.recompute) {
    report_stage("recomputation");
    for (const Candidate& c : tried) {
      Plan plan;
      try {
        plan.graph = materialize(c.graph, c.placements, library, model.moves());
      } catch (const LoomError&) {
        continue;  // a plan that cannot be laid out is no candidate
      }
      plan.pipeline = c.pipeline;
      std::vector<pcg::NodeId> compute;
      for (const pcg::Node& n : plan.graph.nodes())
        if (model.is_compute(n)) compute.push_back(n.id);
      // Every k-th operator is kept as a checkpoint, the operators between two are recomputed
      // together: fewer checkpoints hold less, more recompute less.
      const auto root = static_cast<std::size_t>(std::ceil(std::sqrt(static_cast<double>(compute.size()))));
      for (std::size_t keep_every : std::set<std::size_t>{2, 3, std::max<std::size_t>(root, 2)}) {
        plan.recompute.clear();
        for (std::size_t i = 0; i < compute.size(); ++i)
          if (i % keep_every != keep_every - 1) plan.recompute.push_back(compute[i]);
        const PlanCost cost = simulated_plan_cost(plan, model, library);
        if (cost.fits() && cost.seconds < best.seconds) {
          best = c;
          best.name = c.name + "+recompute";
          best.seconds = cost.seconds;
          recompute = plan.recompute;
        }
      }
    }
  }
  if (!std::isfinite(best.seconds)) throw LoomError(nothing_fits(library, best.graph, best.placements, model));
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
