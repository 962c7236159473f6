#pragma once
// The values a model's operators read when it runs, sampled from one forward pass of the model on
// the data and weights training starts from, so that a task measured alone reads values like the
// run's. Some kernels' speed depends on their values, not only on their shapes: glibc's `erf` (in
// the versions Debian ships today) takes longer paths as its argument grows, and a branch its
// values take unpredictably costs mispredictions, so a GELU over values spread normally about zero
// ran 17 % slower than over values of the same root mean square drawn evenly from -1 to 1, which
// never leave erf's first path.
//
// Samples are pooled per operator, attributes and input: every operator of a kind and attributes
// adds a random sample of each input it read, all of them equal shares. A task of an operator and
// attributes that never ran in the model (one a rewrite made) has no sample.
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

class RunValues {
 public:
  // At most this many values are kept per operator, attributes and input, each operator's an equal
  // share, drawn at random from what it read.
  static constexpr std::size_t kMaxSample = 1 << 16;

  // Adds what input `input` of an operator `op` with `attrs` read.
  void add(const std::string& op, const pcg::AttrMap& attrs, std::size_t input, const std::vector<float>& values);
  // The pooled sample of input `input` of `op` with `attrs`; nullptr when none was added.
  const std::vector<float>* sample(const std::string& op, const pcg::AttrMap& attrs, std::size_t input) const;
  // Operator inputs sampled.
  std::size_t size() const;

 private:
  struct Pool {
    std::vector<std::vector<float>> each;  // per operator, evenly thinned to its share
    std::vector<float> all;                // their values together
  };
  std::map<std::pair<std::string, pcg::AttrMap>, std::vector<Pool>> samples_;
  std::mt19937_64 rng_{1};
};

struct RunValuesReport {
  RunValues values;
  double seconds = 0;  // the forward pass and the sampling
};

// One forward pass of `model` in one process, float, as training's first step runs it: the weights
// training starts from with `seed` and the first batch of that seed's synthetic data, the model's
// own values in their place where `model_values` gives them (an ONNX file's weights, ids and
// masks), operators without a hand-written kernel compiled from their specs or interpreted;
// sampling what every operator reads. Throws LoomError where the model cannot run.
RunValuesReport sample_run_values(const spec::Library& library, const pcg::Graph& model, std::uint64_t seed,
                                  const NamedTensors<double>& model_values = {}, bool compile_from_specs = true);

}  // namespace loom::runtime
