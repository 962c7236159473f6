#pragma once
// Layout changes as graph operators: row-major reshapes (merge_axes, split_axis, squeeze_axis,
// unsqueeze_axis), permutations (swap_axes, with transpose for the last two dimensions) and
// numpy-style broadcasting (unsqueeze_axis, expand_axis). Each emits no operator when the layout
// already fits.
#include <cstdint>
#include <vector>

#include "graph_builder.hpp"

namespace loom::models {

PortRef reshape_to(GraphBuilder& b, PortRef x, const Dims& target);

// Output dimension i is input dimension perm[i].
PortRef permute(GraphBuilder& b, PortRef x, const std::vector<std::int64_t>& perm);

// `x` broadcast to `target` (leading dimensions added, size-1 dimensions repeated).
PortRef broadcast_to(GraphBuilder& b, PortRef x, const Dims& target);

}  // namespace loom::models
