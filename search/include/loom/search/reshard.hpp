#pragma once
// Moving a value from the parallel shape its producer gives to the one a consumer needs: the
// parallelization operators that do it, and what it costs on a machine.
#include <optional>
#include <string>
#include <vector>

#include "loom/pcg/machine_view.hpp"
#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/parallel_shape.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/reshard_forms.hpp"

namespace loom::search {

struct ReshardStep {
  std::string op;  // one of `forms`
  pcg::AttrMap attrs;
};

// Whether some chain of the forms turns a value held as `from` into `to`: not when it would need
// fewer copies or more partial sums than `from` holds, or other pipeline degrees.
bool reshardable(const pcg::ParallelShape& from, const pcg::ParallelShape& to);

// The operators, in order, that turn a value held as `from` into `to`: partial sums added up,
// then a split moved from one dimension to another as one swap (where the library has a swap
// form), or else pieces put together, copies made, and dimensions cut. Nothing when the shapes
// are equal; nullopt when the move is not reshardable.
std::optional<std::vector<ReshardStep>> reshard_steps(const ReshardForms& forms, const pcg::ParallelShape& from,
                                                      const pcg::ParallelShape& to);

// Seconds the move takes forward: every receiving task gathers the pieces it overlaps from the
// nearest holder, each directed device pair a link of its own working in parallel, then partial
// sums are added up where they arrive. Infinity when the move is not reshardable.
double reshard_seconds(const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
                       const pcg::MachineView& to_view, const Machine& machine);

}  // namespace loom::search
