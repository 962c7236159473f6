#pragma once
// From the time a run spent in each operator's tasks to the profile database the cost model
// reads: per operator node this process ran, the key the cost model looks its tasks up by, the
// measured forward and backward time of one task and the roofline the simulator would use
// without a profile; per layout change, its work per piece outside the messages and collectives
// (search::layout_change_key); per weight, the optimizer's step over the box of it a device
// updates (search::weight_update_key).
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/runtime/sharded_executor.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/profile_db.hpp"

namespace loom::runtime {

struct OperatorProfile {
  pcg::NodeId node;
  std::string op;  // a weight's update: the key's, e.g. sgd_update
  search::ProfileKey key;
  double measured_seconds = 0;  // forward, one task (a weight: one update): the mean over the runs measured
  // Forward, one task: the cost model's roofline on the machine (none for a layout change, whose
  // estimate depends on where its pieces are).
  std::optional<double> simulated_seconds;
  std::int64_t tasks = 0;       // forward task runs the measurement is over
  double backward_seconds = 0;  // backward, one task (0 when none ran)
  std::int64_t backward_tasks = 0;
};

// `times` is indexed by node id of `graph` (ShardedExecutor::operator_times(), or a
// TrainReport's). Nodes that ran no forward task here (graph inputs, layout changes fused into
// the next, tasks of other processes) are left out. A layout change is keyed by the change it
// makes: from the first input of its fused chain (search::layout_change_sources) where several
// `processes` ran it, as they fuse chains; from its own input where one process ran every device,
// as it fuses none. A weight's updates are keyed by the box each device updates
// (search::weight_update_boxes) where every device updating it holds one box of the same extent,
// and are left out otherwise; a run of one `processes` updates whole weights. `optimizer`: the
// one the run stepped with; `fixed`: the weights the run kept fixed besides those their readers'
// specs note (search::CostModel::keep_fixed), so tasks are keyed by the gradients the search asks
// for. Throws LoomError when `times` does not match the graph.
std::vector<OperatorProfile> operator_profiles(const spec::Library& library, const pcg::Graph& graph, const search::Machine& machine,
                                               const std::vector<OperatorTime>& times, const std::string& optimizer = "sgd",
                                               int processes = 1, const std::set<std::string>& fixed = {});

// Every process's times added up, so each process holds the whole run's. Collective: every
// process of `transport` calls it with times of the same graph.
std::vector<OperatorTime> summed_over_processes(const std::vector<OperatorTime>& mine, Transport& transport);

// Adds each profile to the database, weighted by its task runs.
void record_profiles(const std::vector<OperatorProfile>& profiles, search::ProfileDatabase& database);

}  // namespace loom::runtime
