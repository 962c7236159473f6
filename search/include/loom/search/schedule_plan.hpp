#pragma once
// A plan written by hand as a schedule, SuperScaler's way (op-trans, op-assign, op-order): the
// schedule's model built at its sizes, rewritten by the proved rules it applies, each operator cut
// by a split its spec derives and its pieces placed on the devices named, values moved between
// layouts by the cheapest chain of layout changes, and the order, micro-batches, stages and
// recomputation recorded in the plan.
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/plan.hpp"

namespace loom::search {

// Builds and checks `schedule` over `model_graph` (its model built at its sizes, from the zoo or a
// `model` declaration) for the cost model's machine. Every name must name an operator
// (a quoted name may hold `*` wildcards); a rule applied must be one of `rules` and match at the
// operators named; a split must be one the operator's spec derives; every piece of every
// operator must be assigned a device of the machine; no order may run against a data dependency
// or close a cycle (a deadlock: reported with the operators in the cycle and the lines that
// ordered them); an operator's devices must lie in one stage, and stages must follow the data;
// micro-batches must divide the batch. Throws LoomError with every problem found, each at the
// statement it comes from. The plan records its source graph and substitutions, so it is audited
// like a searched one, and its simulated iteration time.
Plan plan_from_schedule(const spec::Library& library, const spec::ScheduleDecl& schedule, const pcg::Graph& model_graph,
                        const std::vector<pcg::Rule>& rules, const CostModel& model);

}  // namespace loom::search
