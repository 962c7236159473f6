#include "loom/pcg/task_layout.hpp"

#include <algorithm>

#include "loom/pcg/diagnostic.hpp"

namespace loom::pcg {

TaskPiece task_piece(const ParallelShape& shape, std::int64_t task) {
  if (task < 0 || task >= shape.tasks())
    throw LoomError("task " + std::to_string(task) + " does not exist: " + shape.to_string() + " runs as " + std::to_string(shape.tasks()) + " tasks");
  TaskPiece piece;
  piece.block.assign(shape.rank(), 0);
  for (std::size_t i = shape.rank(); i-- > 0;) {
    piece.block[i] = task % shape.D[i];
    task /= shape.D[i];
  }
  piece.partial = task % shape.V;
  piece.replica = task / shape.V;
  return piece;
}

std::int64_t task_of(const ParallelShape& shape, const TaskPiece& piece) {
  std::int64_t t = piece.replica * shape.V + piece.partial;
  for (std::size_t i = 0; i < shape.rank(); ++i) t = t * shape.D[i] + piece.block[i];
  return t;
}

std::int64_t piece_elements(const ParallelShape& shape) {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < shape.rank(); ++i) n *= shape.dims[i] / shape.D[i];
  return n;
}

std::int64_t overlap_elements(const ParallelShape& sa, const TaskPiece& a, const ParallelShape& sb, const TaskPiece& b) {
  if (sa.dims != sb.dims) throw LoomError("overlap of pieces of different tensors: " + sa.to_string() + " and " + sb.to_string());
  std::int64_t n = 1;
  for (std::size_t i = 0; i < sa.rank(); ++i) {
    const std::int64_t wa = sa.dims[i] / sa.D[i], wb = sb.dims[i] / sb.D[i];
    const std::int64_t lo = std::max(a.block[i] * wa, b.block[i] * wb);
    const std::int64_t hi = std::min((a.block[i] + 1) * wa, (b.block[i] + 1) * wb);
    if (hi <= lo) return 0;
    n *= hi - lo;
  }
  return n;
}

}  // namespace loom::pcg
