#pragma once
// Layout changes that are one collective within groups of devices (the runtime's processes), each
// device of a group holding one old piece and getting one new piece, the groups independent of
// each other:
//   allreduce       the old pieces are partial sums of one box and every new piece is all of it;
//   reduce_scatter  the old pieces are partial sums of one box and the new pieces split it into
//                   equal blocks;
//   all_gather      the old pieces split one box into equal blocks and every new piece is all of it;
//   all_to_all      the old pieces and the new pieces split one box into as many equal pieces two
//                   different ways, and every old piece gives an equal block to every new piece
//                   (a split moved from one dimension to another).
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "loom/pcg/parallel_shape.hpp"
#include "loom/pcg/piece_moves.hpp"

namespace loom::pcg {

enum class Collective { allreduce, reduce_scatter, all_gather, all_to_all };

struct CollectiveGroup {
  std::vector<int> ranks;              // ascending
  std::vector<std::int64_t> from, to;  // per rank of `ranks`: its old task and its new task
  // Per rank, the block of the box it is given (reduce_scatter: its new piece's region) or gives
  // (all_gather: its old piece's region); empty for allreduce. For all_to_all, k * k blocks: block
  // i * k + j is what position i gives position j (its old piece's part of j's new piece).
  std::vector<Region> blocks;

  // The position of `rank` in `ranks`, or ranks.size() when it is not in the group.
  std::size_t position(int rank) const;
};

struct CollectiveGroups {
  Collective kind = Collective::allreduce;
  std::vector<CollectiveGroup> groups;  // no rank in two of them

  // The group holding `rank`, or null when the device has no piece of the change.
  const CollectiveGroup* containing(int rank) const;
};

// `moves` (piece_moves) turn the value laid out as `from`, old task t on device
// `from_rank(t)`, into `to`, new task t on `to_rank(t)`. Empty unless they are exactly one
// collective, the same one in every group.
std::optional<CollectiveGroups> collective_groups(const ParallelShape& from, const ParallelShape& to, const std::vector<PieceMove>& moves,
                                                  const std::function<int(std::int64_t)>& from_rank,
                                                  const std::function<int(std::int64_t)>& to_rank);

// The gradient of a collective's result flows back as this collective: the transpose of a
// reduce-scatter is an all-gather, and the other way round; an allreduce and an all-to-all (whose
// blocks go back the way they came) are their own.
Collective transpose(Collective kind);

}  // namespace loom::pcg
