#pragma once
// Checkpoints: everything a run needs to continue exactly where it stopped. Stored as CBOR
// ({"format": "loom-checkpoint", "version": 1, "dtype", "run", "step", "losses", "weights",
// "optimizer": {"steps", "first_moment", "second_moment"}}, tensors as {"dims", "data": raw
// little-endian bytes}), written through a temporary file and a rename.
#include <cstdint>
#include <string>
#include <vector>

#include "loom/runtime/optimizer.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

template <class T>
struct Checkpoint {
  std::string run;             // what the run trains: model, loss, optimizer; a resume must match
  std::int64_t step = 0;       // steps completed
  std::vector<double> losses;  // one per completed step
  NamedTensors<T> weights;     // every weight, trained or not
  OptimizerState<T> optimizer;
};

template <class T>
void save_checkpoint(const std::string& path, const Checkpoint<T>& checkpoint);

// Throws LoomError naming the file: unreadable, not a checkpoint, another element type.
template <class T>
Checkpoint<T> load_checkpoint(const std::string& path);

// The checkpoint's weights, whichever element type it holds, as doubles.
NamedTensors<double> checkpoint_weights(const std::string& path);

}  // namespace loom::runtime
