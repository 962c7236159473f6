#include "loom/pcg/task_layout.hpp"

#include "loom/pcg/diagnostic.hpp"

namespace loom::pcg {

TaskPiece task_piece(const ParallelShape& shape, std::int64_t task) {
  if (task < 0 || task >= shape.tasks())
    throw LoomError("task " + std::to_string(task) + " does not exist: " + shape.to_string() + " runs as " + std::to_string(shape.tasks()) +
                    " tasks");
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

}  // namespace loom::pcg
