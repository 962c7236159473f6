#include "plan_chain.hpp"

#include "loom/verifier/result_cache.hpp"

namespace loom::cli {

audit::PlanAudit audit_with_user_cache(const search::Plan& plan, const spec::Library& library, bool save_cache) {
  const std::string cache_path = verifier::ResultCache::default_path();
  verifier::ResultCache cache = verifier::ResultCache::load(cache_path);
  audit::AuditOptions options;
  options.cache = &cache;
  audit::PlanAudit result = audit::audit_plan(plan, library, options);
  if (save_cache) cache.save(cache_path);
  return result;
}

}  // namespace loom::cli
