#pragma once
// Initial weights from a seed. Each weight's values are drawn from a generator seeded with the run's
// seed and the weight's name, so they are the same whatever the plan, the node order or the
// number of processes.
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

// The seed of the tensor called `name` in a run seeded with `seed`.
std::uint64_t named_seed(std::uint64_t seed, std::string_view name);

// The weights training updates: every weight except batch-norm running means and variances.
std::set<std::string> trainable_weights(const spec::Library& library, const pcg::Graph& graph);

// Every weight of the graph: matrices and kernels uniform in +-1/sqrt(fan-in), biases likewise,
// normalization scales 1 and shifts 0, batch-norm means 0 and variances 1.
NamedTensors<double> initial_weights(const spec::Library& library, const pcg::Graph& graph, std::uint64_t seed);

// The role of a graph input or weight, from the first operator that reads it (behind the
// parallelization operators of a plan, so a weight has the same role in every plan).
enum class InputRole { Data, LookupIds, Scale, Shift, RunningMean, RunningVariance, Kernel, Matrix };
InputRole input_role(const spec::Library& library, const pcg::Graph& graph, int node);
// Rows of the table that lookup ids index (for InputRole::LookupIds).
std::int64_t lookup_rows(const spec::Library& library, const pcg::Graph& graph, int node);

}  // namespace loom::runtime
