#include "loom/interpreter/program_cache.hpp"

#include <functional>
#include <string_view>

#include "loom/interpreter/cost.hpp"
#include "loom/interpreter/element_sources.hpp"
#include "loom/interpreter/parallel_rules.hpp"
#include "loom/pcg/hash_mix.hpp"

namespace loom::spec {
namespace {

// The `value` that `map` keeps under `lookup` (a tuple of references to the key's parts), worked
// out by `work_out` outside the lock and kept, error and all, when it is not there yet.
template <class Map, class Value, class Lookup, class WorkOut>
Value kept(std::mutex& mutex, std::size_t capacity, Map& map, Value Map::mapped_type::*value, const Lookup& lookup,
           const WorkOut& work_out) {
  using Kept = typename Map::mapped_type;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = map.find(lookup); it != map.end()) {
      if (it->second.error) throw *it->second.error;
      return it->second.*value;
    }
  }
  // Worked out outside the lock: another thread may work out the same entry meanwhile, and the
  // first one kept wins; both are equal.
  Kept entry;
  try {
    entry.*value = work_out();
  } catch (const LoomError& e) {
    entry.error = e;
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (map.size() >= capacity) map.clear();
  const Kept& stored = map.emplace(typename Map::key_type(lookup), std::move(entry)).first->second;
  if (stored.error) throw *stored.error;
  return stored.*value;
}

}  // namespace

std::uint64_t ProgramCache::hash_part(const pcg::AttrMap& attrs) {
  std::uint64_t h = attrs.size();
  for (const auto& [name, value] : attrs)
    h = pcg::hash_mix(pcg::hash_mix(h, std::hash<std::string_view>{}(name)), static_cast<std::uint64_t>(value));
  return h;
}

std::uint64_t ProgramCache::hash_part(const std::vector<std::vector<std::int64_t>>& dims) {
  std::uint64_t h = dims.size();
  for (const auto& d : dims) {
    h = pcg::hash_mix(h, d.size());
    for (std::int64_t n : d) h = pcg::hash_mix(h, static_cast<std::uint64_t>(n));
  }
  return h;
}

std::uint64_t ProgramCache::hash_part(const std::vector<pcg::ParallelShape>& shapes) {
  std::uint64_t h = shapes.size();
  for (const pcg::ParallelShape& s : shapes) h = pcg::hash_mix(h, std::hash<pcg::ParallelShape>{}(s));
  return h;
}

std::shared_ptr<const Program> ProgramCache::get(const OpDecl& op, const pcg::AttrMap& attrs,
                                                 const std::vector<std::vector<std::int64_t>>& input_dims) {
  return kept(mutex_, capacity_, programs_, &Entry::program, std::forward_as_tuple(&op, attrs, input_dims),
              [&] { return std::make_shared<const Program>(compile(op, attrs, input_dims)); });
}

std::vector<pcg::ParallelShape> ProgramCache::output_shapes(const OpDecl& op, const pcg::AttrMap& attrs,
                                                            const std::vector<pcg::ParallelShape>& inputs) {
  return kept(mutex_, capacity_, shapes_, &Shapes::outputs, std::forward_as_tuple(&op, attrs, inputs), [&] {
    std::vector<std::vector<std::int64_t>> dims;
    dims.reserve(inputs.size());
    for (const pcg::ParallelShape& s : inputs) dims.push_back(s.dims);
    return derive_output_degrees(*get(op, attrs, dims), inputs);
  });
}

pcg::TaskCost ProgramCache::task_cost(const OpDecl& op, const pcg::AttrMap& attrs, const std::vector<pcg::ParallelShape>& inputs) {
  return kept(mutex_, capacity_, costs_, &Costs::cost, std::forward_as_tuple(&op, attrs, inputs), [&] {
    std::vector<std::vector<std::int64_t>> dims;
    dims.reserve(inputs.size());
    for (const pcg::ParallelShape& s : inputs) dims.push_back(s.dims);
    return spec::task_cost(*get(op, attrs, dims), inputs, output_shapes(op, attrs, inputs));
  });
}

bool ProgramCache::moves_each_element_once(const OpDecl& op, const pcg::AttrMap& attrs,
                                           const std::vector<std::vector<std::int64_t>>& input_dims) {
  return kept(mutex_, capacity_, rearranges_, &Rearranges::each_once, std::forward_as_tuple(&op, attrs, input_dims),
              [&] { return spec::moves_each_element_once(*get(op, attrs, input_dims), input_dims); });
}

}  // namespace loom::spec
