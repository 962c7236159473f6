#pragma once
// What `loom optimize` does, for the CLI and the benchmarks alike: the joint search, the
// baselines in the same cost model, and the fastest plan among them (every baseline is a point
// of the joint search's space, so the result never loses to one).
#include <map>
#include <string>
#include <vector>

#include "loom/search/baselines.hpp"
#include "loom/search/joint_search.hpp"
#include "loom/search/pipeline.hpp"

namespace loom::search {

struct OptimizeSettings {
  JointOptions joint;
  bool baselines = true;  // data parallel, expert, FlexFlow MCMC, sequential
  bool pipeline = true;   // also try pipeline parallelism (1F1B) over the whole graph
  // When no plan fits in memory, try each plan the searches made with activation checkpoints: every
  // 2nd, 3rd or sqrt(n)-th of its n operators keeps its output, those between two checkpoints drop
  // theirs after the forward pass and compute them again for the backward.
  bool recompute = true;
  // When even that does not fit, try them co-sharded too (coshard_placements: each operator in 2 or
  // 4 times as many pieces on the same devices), with the same checkpoints, and with each of those
  // keeping the operators that make the graph's outputs.
  bool coshard = true;
  PipelineOptions pipeline_options;
  std::size_t mcmc_iterations = 300;  // FlexFlow's search, and the refinement of the joint plan
  double mcmc_seconds = 30;           // each of those walks' time bound (McmcOptions::max_seconds); the two refining walks get half each
  std::uint64_t seed = 1;
  // Threads for the work that does not wait on other work: the two refining walks and the pipeline
  // search run at once when this is above 1 (each with its own cache of layout moves). The plan
  // does not depend on it, unless a walk stops at its time bound. A model that measures its tasks
  // runs them one after another.
  int jobs = 1;
};

struct OptimizeProgress {
  std::string stage;  // e.g. "joint search", "baseline: flexflow_mcmc"
  JointProgress joint;
};

// The wall clock one stage of `optimize` took, in the order the stages began.
struct StageTime {
  std::string stage;
  double seconds = 0;
  bool alongside = false;  // ran at the same time as the stage before it (OptimizeSettings::jobs)
};

struct OptimizeReport {
  pcg::Graph graph;                   // the unsplit graph the plan runs (after substitutions)
  std::vector<Placement> placements;  // per node of `graph`
  pcg::Graph plan;                    // `graph` materialized: the PCG with machine views
  double best_seconds = 0;            // simulated
  std::string chosen;                 // which search found it: joint, joint+mcmc, joint+data_parallel+mcmc, pipeline, or a baseline's name
  Pipeline pipeline;                  // the chosen plan's pipeline (none unless `chosen` is pipeline)
  std::vector<int> pipeline_stage_sizes;  // the best pipeline's nodes per stage (PipelineResult::stage_sizes)
  bool pipeline_interlaced = false;       // the best pipeline's (PipelineResult::interlaced)
  bool pipeline_looping = false;          // the best pipeline's (PipelineResult::looping)
  std::vector<pcg::NodeId> recompute;     // nodes of `plan` recomputed: only when nothing fit without (`chosen` ends in +recompute)
  // When the plan is co-sharded (`chosen` ends in +coshard+recompute): pieces per device of each
  // operator cut finer, and how many operators were.
  struct Coshard {
    int pieces_per_device = 0;
    std::size_t operators = 0;
  } coshard;
  std::vector<AppliedSubstitution> substitutions;
  double joint_seconds = 0;      // the joint search's plan, simulated, before refinement
  double refined_seconds = 0;    // the same after the MCMC refinement (joint_seconds without one)
  std::string refinement_start;  // where the refined plan's walk began: "joint" (the DP's plan), "data_parallel" (over the joint graph), or
                                 // "none" (no walk improved the DP's plan)
  double pipeline_seconds = 0;   // the best pipeline found (infinity: none fits or none tried)
  std::string pipeline_none_because;        // when pipelines were tried and none was found, why (PipelineResult)
  std::map<std::string, double> baselines;  // name -> simulated seconds (infinity: does not fit)
  double initial_seconds = 0;               // the graph as given, on one device
  double search_seconds = 0;                // wall clock of the joint search alone
  double total_seconds = 0;                 // wall clock of everything
  std::vector<StageTime> stages;            // each stage's share of total_seconds (more than all of it where stages ran alongside)
  JointResult joint;
};

OptimizeReport optimize(const spec::Library& library, const pcg::Graph& graph, const std::vector<pcg::Rule>& rules, const CostModel& model,
                        const OptimizeSettings& settings = {}, const std::function<void(const OptimizeProgress&)>& progress = {});

}  // namespace loom::search
