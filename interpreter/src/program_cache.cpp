#include "loom/interpreter/program_cache.hpp"

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

}  // namespace loom::spec
