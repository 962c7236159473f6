#pragma once
// A plan's folded weights (pcg/weight_folding.hpp) made from the weights they were folded from,
// and taken back apart: a run starts from, checkpoints and reports the model's own weights,
// whichever plan it ran.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

class FoldedWeights {
 public:
  // Throws LoomError naming the weight when a recipe does not hold each of its parts' elements
  // once (a plan file written by hand, say).
  FoldedWeights(const spec::Library& library, const pcg::Graph& graph);

  bool empty() const { return folds_.empty(); }

  // `by_parts` with each folded weight made from its parts, which it replaces. A folded weight
  // none of whose parts is there is left out (the moments of an optimizer that keeps none);
  // throws LoomError naming the part when only some are.
  template <class T>
  NamedTensors<T> folded(NamedTensors<T> by_parts) const;

  // `weights` with each folded weight there replaced by its parts.
  template <class T>
  NamedTensors<T> by_parts(NamedTensors<T> weights) const;

 private:
  struct Fold {
    std::string name;
    std::vector<std::int64_t> dims;
    std::vector<std::string> parts;
    std::vector<std::vector<std::int64_t>> part_dims;
    // spec::element_sources of its recipe, shared by the folds of one form (a model's layers)
    std::shared_ptr<const std::vector<std::int64_t>> sources;
  };
  std::vector<Fold> folds_;
};

}  // namespace loom::runtime
