#pragma once
// What taking the loss of a graph's (first) output where its pieces lie asks of the devices holding
// them: the rule the runtime follows and the simulator prices.
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/pcg/piece_moves.hpp"

namespace loom::search {

// The loss training takes of the graph's (first) output, averaged over the batch (`loom train
// --loss`): the mean squared error, or cross-entropy over the output's last axis.
enum class LossKind { MeanSquaredError, CrossEntropy };

// "mse" or "cross-entropy"; throws LoomError naming the text otherwise.
LossKind loss_from_name(const std::string& name);
std::string loss_name(LossKind kind);

// Whether cross-entropy reads the graph's (first) output as probabilities rather than logits: the
// spec of the operator computing it, behind the parallelization operators that assemble it, notes
// that output `@probabilities` (softmax's does).
bool output_is_probabilities(const spec::Library& library, const pcg::Graph& graph);

// The numbers a device gives per row of the output when the devices share their rows' statistics:
// the row's largest logit over the classes it holds, and the sum of their exponentials taken from it.
inline constexpr int kRowStatistics = 2;

// Whether the loss over the output, held in pieces of `held`, makes the devices holding them share
// their rows' statistics (an all-gather among them) before each takes the loss of its pieces:
// cross-entropy where the output holds logits and its pieces split the class axis (the last).
// Probabilities need only the probability of each row's class, which one piece holds.
bool shares_row_statistics(LossKind loss, const pcg::ParallelShape& held, bool probabilities);

// The rows of an output of `dims`: its elements but for the class axis (the last).
std::int64_t output_rows(const std::vector<std::int64_t>& dims);

// Devices whose pieces of the output hold the same rows, each some of their classes: they gather
// those rows' statistics from each other (each gives kRowStatistics numbers a row of `rows`).
struct RowStatisticsGroup {
  pcg::Region rows;          // of the output without its class axis
  std::vector<int> devices;  // ascending, at least two
};

// The groups of devices that share rows' statistics, in an order every device takes them in, for
// the output held in pieces of `held`, task t's piece on device `device_of_task[t]` (replicas take
// no part; a graph's output holds no partial sums). A device whose pieces hold all of some rows'
// classes gathers nothing for them.
std::vector<RowStatisticsGroup> row_statistics_groups(const pcg::ParallelShape& held, const std::vector<int>& device_of_task);

}  // namespace loom::search
