#pragma once
// Compiled instances of operators, and the parallel shapes they output, kept so that the search,
// which asks for the same operator at the same shapes many thousands of times, works each out once.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <vector>

#include "loom/interpreter/program.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/parallel_shape.hpp"

namespace loom::spec {

class ProgramCache {
 public:
  explicit ProgramCache(std::size_t capacity = 1 << 16) : capacity_(capacity) {}

  // compile(op, attrs, input_dims), from the cache when this instance was compiled before. An
  // instance that does not compile throws as compile does, and that error is kept too: checks at
  // random sizes ask for the same ill-typed instance again and again. Safe to call from several
  // threads.
  std::shared_ptr<const Program> get(const OpDecl& op, const pcg::AttrMap& attrs, const std::vector<std::vector<std::int64_t>>& input_dims);

  // derive_output_degrees of the instance the inputs' dims make, kept in the same way: a plan's
  // layout is inferred anew for every plan the search costs.
  std::vector<pcg::ParallelShape> output_shapes(const OpDecl& op, const pcg::AttrMap& attrs, const std::vector<pcg::ParallelShape>& inputs);

 private:
  using Key = std::tuple<const OpDecl*, pcg::AttrMap, std::vector<std::vector<std::int64_t>>>;
  struct Entry {
    std::shared_ptr<const Program> program;
    std::optional<LoomError> error;
  };
  std::size_t capacity_;
  std::mutex mutex_;
  std::map<Key, Entry, std::less<>> programs_;  // looked up without copying a key
  using ShapesKey = std::tuple<const OpDecl*, pcg::AttrMap, std::vector<pcg::ParallelShape>>;
  struct Shapes {
    std::vector<pcg::ParallelShape> outputs;
    std::optional<LoomError> error;
  };
  std::map<ShapesKey, Shapes, std::less<>> shapes_;
};

}  // namespace loom::spec
