#pragma once
// Compiled instances of operators, and the parallel shapes they output, kept so that the search,
// which asks for the same operator at the same shapes many thousands of times, works each out once.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "loom/interpreter/program.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/hash_mix.hpp"
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

  // spec::task_cost of the instance on these parallel shapes and the shapes it outputs, kept in
  // the same way: the simulator costs every task of every plan the search tries.
  pcg::TaskCost task_cost(const OpDecl& op, const pcg::AttrMap& attrs, const std::vector<pcg::ParallelShape>& inputs);

  // Whether the instance's one output holds each input element once and nothing else
  // (element_sources), kept in the same way: the search asks at every merge it tries.
  bool moves_each_element_once(const OpDecl& op, const pcg::AttrMap& attrs, const std::vector<std::vector<std::int64_t>>& input_dims);

 private:
  // Parts of an instance's key, hashed; keys are looked up as tuples of references to their parts.
  static std::uint64_t hash_part(const pcg::AttrMap& attrs);
  static std::uint64_t hash_part(const std::vector<std::vector<std::int64_t>>& dims);
  static std::uint64_t hash_part(const std::vector<pcg::ParallelShape>& shapes);
  struct InstanceHash {
    using is_transparent = void;
    template <class Tuple>
    std::size_t operator()(const Tuple& key) const {
      const auto op = reinterpret_cast<std::uintptr_t>(std::get<0>(key));
      return static_cast<std::size_t>(pcg::hash_mix(pcg::hash_mix(op, hash_part(std::get<1>(key))), hash_part(std::get<2>(key))));
    }
  };
  struct InstanceEqual {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return std::get<0>(a) == std::get<0>(b) && std::get<2>(a) == std::get<2>(b) && std::get<1>(a) == std::get<1>(b);
    }
  };
  template <class Key, class Value>
  using Kept = std::unordered_map<Key, Value, InstanceHash, InstanceEqual>;

  using Key = std::tuple<const OpDecl*, pcg::AttrMap, std::vector<std::vector<std::int64_t>>>;
  struct Entry {
    std::shared_ptr<const Program> program;
    std::optional<LoomError> error;
  };
  std::size_t capacity_;
  std::mutex mutex_;
  Kept<Key, Entry> programs_;  // looked up without copying a key
  using ShapesKey = std::tuple<const OpDecl*, pcg::AttrMap, std::vector<pcg::ParallelShape>>;
  struct Shapes {
    std::vector<pcg::ParallelShape> outputs;
    std::optional<LoomError> error;
  };
  Kept<ShapesKey, Shapes> shapes_;
  struct Costs {
    pcg::TaskCost cost;
    std::optional<LoomError> error;
  };
  Kept<ShapesKey, Costs> costs_;
  struct Rearranges {
    bool each_once = false;
    std::optional<LoomError> error;
  };
  Kept<Key, Rearranges> rearranges_;
};

}  // namespace loom::spec
