#pragma once
// Running a layout change that is one collective (loom/pcg/collective_groups.hpp) through a
// transport.
#include <cstdint>
#include <vector>

#include "loom/pcg/collective_groups.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/transport.hpp"
#include "piece_regions.hpp"

namespace loom::runtime {

using pcg::CollectiveGroup;
using pcg::CollectiveGroups;

// This process's part of `kind` in `group`, where it stands at position `k`: it gives its piece
// `source` (covering `source_region`) and adds what it gets into `target` (covering
// `target_region`, made zeros of `target_dims` when empty). Every process of the group calls it.
// `reversed`: an all-to-all's blocks go back the way they came (its gradient).
template <class T>
void run_collective(Transport& transport, Collective kind, const CollectiveGroup& group, std::size_t k, const Tensor<T>& source,
                    const pcg::Region& source_region, Tensor<T>& target, const pcg::Region& target_region,
                    const std::vector<std::int64_t>& target_dims, bool reversed = false) {
  switch (kind) {
    case Collective::all_to_all: {
      const std::size_t n = group.ranks.size();
      const auto given = [&](std::size_t from, std::size_t to) -> const pcg::Region& {
        return reversed ? group.blocks[to * n + from] : group.blocks[from * n + to];
      };
      std::vector<T> blocks;
      for (std::size_t j = 0; j < n; ++j) append_box(source, source_region, given(k, j), blocks);
      transport.all_to_all(blocks, group.ranks);
      const std::size_t size = blocks.size() / n;
      for (std::size_t j = 0; j < n; ++j) {
        const auto begin = blocks.begin() + static_cast<std::ptrdiff_t>(j * size);
        place_box(target, target_dims, target_region, given(j, k), std::vector<T>(begin, begin + static_cast<std::ptrdiff_t>(size)));
      }
      return;
    }
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
        place_box(target, target_dims, target_region, group.blocks[j],
                  std::vector<T>(begin, begin + static_cast<std::ptrdiff_t>(block_size)));
      }
      return;
    }
  }
}

}  // namespace loom::runtime
