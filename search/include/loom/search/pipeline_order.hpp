#pragma once
// The order in which one stage of a pipeline runs its micro-batches' passes: the simulator orders
// a stage's tasks by it and the runtime runs a process's passes by it.
#include <utility>
#include <vector>

#include "loom/pcg/graph.hpp"
#include "loom/search/plan.hpp"

namespace loom::search {

// The steps of stage `stage` of `stages`: (micro-batch, backward?) in the order the stage runs
// them. GPipe: every forward, then every backward from the last micro-batch. 1F1B: stages - stage - 1
// forwards to fill the pipeline, then one forward and one backward in turn, then the backwards left.
std::vector<std::pair<int, bool>> stage_steps(PipelineOrder order, int stage, int stages, int microbatches);

// Whether every stage runs the first stage's order: a node of the plan has pieces in more than one
// of `stages` equal blocks of `devices` (an interlaced operator, or the move into it), and a process
// runs a micro-batch's pass whole, so those pieces would wait on a stage that waits for them. The
// simulator then orders every stage's steps, and counts the micro-batches each holds, as the first
// stage's; the runtime runs them so.
bool runs_in_one_order(const pcg::Graph& plan, int stages, int devices);

}  // namespace loom::search
