#pragma once
// The order in which one stage of a pipeline runs its micro-batches' passes: the simulator orders
// a stage's tasks by it and the runtime runs a process's passes by it.
#include <utility>
#include <vector>

#include "loom/search/plan.hpp"

namespace loom::search {

// The steps of stage `stage` of `stages`: (micro-batch, backward?) in the order the stage runs
// them. GPipe: every forward, then every backward from the last micro-batch. 1F1B: stages - stage - 1
// forwards to fill the pipeline, then one forward and one backward in turn, then the backwards left.
std::vector<std::pair<int, bool>> stage_steps(PipelineOrder order, int stage, int stages, int microbatches);

}  // namespace loom::search
