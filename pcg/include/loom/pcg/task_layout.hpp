#pragma once
// Which piece of a parallel tensor each of its tasks holds. Tasks are numbered with replicas
// outermost, then partial sums, then the partitioned dimensions in order, the last fastest:
//   t = ((r * V + v) * D[0] + b[0]) * D[1] + b[1] ...
// The simulator and the runtime both read pieces through this one convention.
#include <cstdint>
#include <vector>

#include "loom/pcg/parallel_shape.hpp"

namespace loom::pcg {

struct TaskPiece {
  std::int64_t replica = 0;
  std::int64_t partial = 0;
  std::vector<std::int64_t> block;  // block index along each dimension

  bool operator==(const TaskPiece&) const = default;
};

TaskPiece task_piece(const ParallelShape& shape, std::int64_t task);
std::int64_t task_of(const ParallelShape& shape, const TaskPiece& piece);

// Elements one task holds (all its pipeline pieces together).
std::int64_t piece_elements(const ParallelShape& shape);

}  // namespace loom::pcg
