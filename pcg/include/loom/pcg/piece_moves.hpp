#pragma once
// How a value's pieces move when its layout changes (a parallelization operator, or a value read
// on other devices than it was made on): which region of which old task goes into which new task.
// The simulator counts these moves; the runtime performs them.
#include <compare>
#include <cstdint>
#include <vector>

#include "loom/pcg/machine_view.hpp"
#include "loom/pcg/parallel_shape.hpp"

namespace loom::pcg {

// A box of the logical tensor: [lo[i], hi[i]) along each dimension.
struct Region {
  std::vector<std::int64_t> lo, hi;

  std::int64_t elements() const;
  std::vector<std::int64_t> extent() const;  // hi - lo, per dimension
  bool empty() const { return elements() == 0; }
  bool operator==(const Region&) const = default;
  auto operator<=>(const Region&) const = default;  // any strict order, for keys
};

// All of a tensor of these dimensions.
Region whole_region(const std::vector<std::int64_t>& dims);

// The region task `task` of `shape` holds (all its pipeline pieces together).
Region piece_region(const ParallelShape& shape, std::int64_t task);
// The common part of two regions of one tensor; empty when they do not meet.
Region intersect(const Region& a, const Region& b);
// Whether some two of `boxes` share an element.
bool any_overlap(const std::vector<Region>& boxes);

// `region` of task `from` of the old layout is added into task `to` of the new one.
struct PieceMove {
  std::int64_t from = 0, to = 0;
  Region region;

  bool operator==(const PieceMove&) const = default;
};

// Every move that turns the value laid out as `from` (its tasks on `from_view`) into `to` (on
// `to_view`): each new piece gathers the overlapping old pieces whose partial sums it includes,
// summing them where `to` has fewer partial sums, and reads a replica on its own device where
// there is one. Moves are ordered by new task, then old task. Throws LoomError when the shapes
// are of different tensors.
std::vector<PieceMove> piece_moves(const ParallelShape& from, const MachineView& from_view, const ParallelShape& to,
                                   const MachineView& to_view);

}  // namespace loom::pcg
