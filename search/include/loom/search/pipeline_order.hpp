#pragma once
// The order in which one stage of a pipeline runs its micro-batches' passes: the simulator orders
// a stage's tasks by it and the runtime runs a process's passes by it.
#include <utility>
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/search/plan.hpp"

namespace loom::search {

// One step of a stage: a micro-batch's forward pass through one lap, or its whole backward pass.
struct PipelineStep {
  int microbatch = 0;
  int lap = 0;
  bool backward = false;
  bool operator==(const PipelineStep&) const = default;
};

// The steps of stage `stage` of `stages` in the order the stage runs them. GPipe: every forward,
// then every backward from the last micro-batch. 1F1B: stages - stage - 1 forwards to fill the
// pipeline, then one forward and one backward in turn, then the backwards left. A pipeline whose
// data goes round the stages `laps` times (pipeline_laps) runs the laps before the last first, lap
// by lap, each micro-batch in turn, then the last lap and the backward passes in the order: with
// three laps of which only the last trains, 1F1B is SuperScaler's 3F1B.
std::vector<PipelineStep> stage_steps(PipelineOrder order, int stage, int stages, int microbatches, int laps = 1);

// Per node of `plan`, its lap: how many times the data on its way to the node went back from a
// later stage to an earlier one (AlphaFold2's recycling passes, each through every stage); 0 for
// every node of a pipeline whose stages follow the data, and for graph inputs. A node with pieces
// in several stages (interlaced) takes the lap of its inputs.
std::vector<int> pipeline_laps(const pcg::Graph& plan, int stages, int devices);
// The same from each node's stage (`stage`, per node; -1: none, as for a graph input).
std::vector<int> laps_of_stages(const pcg::Graph& graph, const std::vector<int>& stage);

// Whether every stage runs the first stage's order: a node of the plan has pieces in more than one
// of `stages` equal blocks of `devices` (an interlaced operator, or the move into it), or a gradient
// goes back from one lap to the one before (`takes_gradient`, per node; empty: none does), and a
// process runs a micro-batch's pass whole (its backward pass), so those pieces would wait on a
// stage that waits for them. The simulator then orders every stage's steps, and counts the micro-batches each holds, as
// the first stage's; the runtime runs them so.
bool runs_in_one_order(const pcg::Graph& plan, int stages, int devices, const std::vector<bool>& takes_gradient = {});

}  // namespace loom::search
