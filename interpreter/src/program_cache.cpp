#include "loom/interpreter/program_cache.hpp"

#include "loom/interpreter/parallel_rules.hpp"

namespace loom::spec {

std::shared_ptr<const Program> ProgramCache::get(const OpDecl& op, const pcg::AttrMap& attrs,
                                                 const std::vector<std::vector<std::int64_t>>& input_dims) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = programs_.find(std::forward_as_tuple(&op, attrs, input_dims)); it != programs_.end()) {
      if (it->second.error) throw *it->second.error;
      return it->second.program;
    }
  }
  // Compiled outside the lock: another thread may compile the same instance meanwhile, and the
  // first one kept wins; both are equal.
  Entry entry;
  try {
    entry.program = std::make_shared<const Program>(compile(op, attrs, input_dims));
  } catch (const LoomError& e) {
    entry.error = e;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (programs_.size() >= capacity_) programs_.clear();
  const Entry& kept = programs_.emplace(Key{&op, attrs, input_dims}, std::move(entry)).first->second;
  if (kept.error) throw *kept.error;
  return kept.program;
}

std::vector<pcg::ParallelShape> ProgramCache::output_shapes(const OpDecl& op, const pcg::AttrMap& attrs,
                                                            const std::vector<pcg::ParallelShape>& inputs) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = shapes_.find(std::forward_as_tuple(&op, attrs, inputs)); it != shapes_.end()) {
      if (it->second.error) throw *it->second.error;
      return it->second.outputs;
    }
  }
  Shapes entry;
  try {
    std::vector<std::vector<std::int64_t>> dims;
    dims.reserve(inputs.size());
    for (const pcg::ParallelShape& s : inputs) dims.push_back(s.dims);
    entry.outputs = derive_output_degrees(*get(op, attrs, dims), inputs);
  } catch (const LoomError& e) {
    entry.error = e;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (shapes_.size() >= capacity_) shapes_.clear();
  const Shapes& kept = shapes_.emplace(ShapesKey{&op, attrs, inputs}, std::move(entry)).first->second;
  if (kept.error) throw *kept.error;
  return kept.outputs;
}

}  // namespace loom::spec
