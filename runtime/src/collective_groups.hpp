#pragma once
// Layout changes that are one collective within groups of processes, each process of a group
// giving one old piece and getting one new piece, the groups independent of each other:
//   allreduce       the old pieces are partial sums of one box and every new piece is all of it;
//   reduce_scatter  the old pieces are partial sums of one box and the new pieces split it into
//                   equal blocks;
//   all_gather      the old pieces split one box into equal blocks and every new piece is all of it.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "loom/pcg/piece_moves.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/transport.hpp"
#include "piece_regions.hpp"

namespace loom::runtime {

struct CollectiveGroup {
  std::vector<int> ranks;              // ascending
  std::vector<std::int64_t> from, to;  // per rank of `ranks`: its old task and its new task
  // Per rank, the block of the box it is given (reduce_scatter: its new piece's region) or gives
  // (all_gather: its old piece's region); empty for allreduce.
  std::vector<pcg::Region> blocks;

  // The position of `rank` in `ranks`, or ranks.size() when it is not in the group.
  std::size_t position(int rank) const;
};

struct CollectiveGroups {
  Collective kind = Collective::allreduce;
  std::vector<CollectiveGroup> groups;  // no rank in two of them

  // The group holding `rank`, or null when the process has no piece of the change.
  const CollectiveGroup* containing(int rank) const;
};

// `moves` (pcg::piece_moves) turn the value laid out as `from`, old task t on the process
// `from_rank(t)`, into `to`, new task t on `to_rank(t)`. Empty unless they are exactly one
// collective, the same one in every group.
std::optional<CollectiveGroups> collective_groups(const pcg::ParallelShape& from, const pcg::ParallelShape& to,
                                                  const std::vector<pcg::PieceMove>& moves, const std::function<int(std::int64_t)>& from_rank,
                                                  const std::function<int(std::int64_t)>& to_rank);

// The gradient of a collective's result flows back as this collective: the transpose of a
// reduce-scatter is an all-gather, and the other way round; an allreduce is its own.
Collective transpose(Collective kind);

// This process's part of `kind` in `group`, where it stands at position `k`: it gives its piece
// `source` (covering `source_region`) and adds what it gets into `target` (covering
// `target_region`, made zeros of `target_dims` when empty). Every process of the group calls it.
template <class T>
void run_collective(Transport& transport, Collective kind, const CollectiveGroup& group, std::size_t k, const Tensor<T>& source,
                    const pcg::Region& source_region, Tensor<T>& target, const pcg::Region& target_region,
                    const std::vector<std::int64_t>& target_dims) {
  switch (kind) {
    case Collective::allreduce: {
      std::vector<T> sum = source.data;
      if (group.ranks.size() > 1) transport.sum(sum, group.ranks);
      place_box(target, target_dims, target_region, target_region, std::move(sum));
      return;
    }
    case Collective::reduce_scatter: {
      std::vector<T> blocks;
      for (const pcg::Region& block : group.blocks) {
        const std::vector<T> part = read_box(source, source_region, block);
        blocks.insert(blocks.end(), part.begin(), part.end());
      }
      transport.reduce_scatter(blocks, group.ranks);
      place_box(target, target_dims, target_region, group.blocks[k], std::move(blocks));
      return;
    }
    case Collective::all_gather: {
      std::vector<T> all = read_box(source, source_region, group.blocks[k]);
      const std::size_t block_size = all.size();
      transport.all_gather(all, group.ranks);
      for (std::size_t j = 0; j < group.blocks.size(); ++j) {
        const auto begin = all.begin() + static_cast<std::ptrdiff_t>(j * block_size);
        place_box(target, target_dims, target_region, group.blocks[j], std::vector<T>(begin, begin + static_cast<std::ptrdiff_t>(block_size)));
      }
      return;
    }
  }
}

}  // namespace loom::runtime
