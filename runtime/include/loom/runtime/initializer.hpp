#pragma once
// Initial weights from a seed. Each weight's values are drawn from a generator seeded with the run's
// seed and the weight's name, so they are the same whatever the plan, the node order or the
// number of processes.
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "loom/interpreter/input_roles.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

// The seed of the tensor called `name` in a run seeded with `seed`.
std::uint64_t named_seed(std::uint64_t seed, std::string_view name);

// The weights training updates, and the roles of inputs (loom/interpreter/input_roles.hpp).
using spec::input_role;
using spec::InputRole;
using spec::trainable_weights;

// Every weight of the graph: those noted `@init(v)` in their reader's spec start at v (scales 1,
// shifts 0, running means 0 and variances 1); lookup ids are rows of their table; the rest are
// uniform in +-1/sqrt(fan-in). A folded weight is made from its parts' starting values.
NamedTensors<double> initial_weights(const spec::Library& library, const pcg::Graph& graph, std::uint64_t seed);

// The same by the model's names: each folded weight's parts (pcg/weight_folding.hpp) drawn by their
// own names and dims, with the role of the folded weight's reader and the extent of their own
// dimensions it sums over, as the model draws them for the unmerged operators reading them there.
NamedTensors<double> initial_weights_by_parts(const spec::Library& library, const pcg::Graph& graph, std::uint64_t seed);

// The value an `@init` input starts at (0 without the note).
double initial_constant(const spec::Library& library, const pcg::Graph& graph, pcg::NodeId node);
// Rows of the table that lookup ids index (for InputRole::LookupIds): the first dimension of the
// input their `@index(table)` note names.
std::int64_t lookup_rows(const spec::Library& library, const pcg::Graph& graph, pcg::NodeId node);
// A weight's fan-in: the extent of the dimensions its reader's comprehension sums over, else its
// next-to-last dimension (its first, when it has one).
std::int64_t fan_in(const spec::Library& library, const pcg::Graph& graph, pcg::NodeId node);

}  // namespace loom::runtime
