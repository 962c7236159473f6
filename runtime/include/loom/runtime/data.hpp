#pragma once
// Training data: one batch per step, as values of the graph's inputs and a target for the loss.
//
// Data files (`loom train --data FILE`) are little-endian binary:
//   8 bytes   "LOOMDATA"
//   u32       version (1)
//   u32       number of tensors
//   per tensor:
//     u32     name length, then the name (UTF-8, no terminator)
//     u32     rank, then rank x i64 dimensions
//     f64     the values, row-major
// There is one tensor per graph input, named as the input, and one called "target". Every tensor's
// first dimension counts samples (the same count in all); the rest are the input's dimensions
// after its batch dimension. The target holds, per sample, the output's values (mse) or the class
// number of every row of the output (cross-entropy). Step s uses batch s mod (samples / batch).
#include <cstdint>
#include <memory>
#include <string>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/runtime/loss.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

struct Batch {
  NamedTensors<double> inputs;
  Tensor<double> target;
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // The batch of step `step` (0-based); the same step always gives the same batch. It stays valid
  // until the next call, so that a batch held in memory is read where it lies, not copied each step.
  virtual const Batch& batch(std::int64_t step) const = 0;
};

// The target's shape for a graph's first output: the output's (mse) or without its class axis.
std::vector<std::int64_t> target_dims(const pcg::Graph& graph, LossKind loss);

// `batches` fixed batches drawn from `seed`, used in turn: inputs uniform in [-1, 1] (lookup ids:
// row numbers of their table), targets uniform in [-1, 1] (mse) or uniform class numbers.
// Each tensor is drawn from the seed and its name, so every plan of a model sees the same data.
std::unique_ptr<DataSource> synthetic_data(const spec::Library& library, const pcg::Graph& graph, LossKind loss, std::uint64_t seed,
                                           std::int64_t batches = 4);

// Reads a data file (format above) for `graph`; throws LoomError naming the file and the problem.
std::unique_ptr<DataSource> load_data_file(const std::string& path, const pcg::Graph& graph, LossKind loss);

// Writes a data file; `tensors` as described above.
void save_data_file(const std::string& path, const NamedTensors<double>& tensors);

}  // namespace loom::runtime
