#include "plan_chain.hpp"

#include "loom/verifier/proof_record.hpp"
#include "loom/verifier/result_cache.hpp"

namespace loom::cli {

void bind_rule_hashes(search::Plan& plan, const spec::Library& library) {
  for (search::AppliedSubstitution& s : plan.substitutions)
    for (const pcg::Rule& r : plan.rules)
      if (r.id == s.rule) s.rule_hash = verifier::rule_hash(r, library);
}

audit::PlanAudit audit_with_cache(const search::Plan& plan, const spec::Library& library, const std::string& cache_path, bool save_cache,
                                  unsigned timeout_ms) {
  verifier::ResultCache cache = cache_path.empty() ? verifier::ResultCache{} : verifier::ResultCache::load(cache_path);
  audit::AuditOptions options;
  options.cache = cache_path.empty() ? nullptr : &cache;
  options.timeout_ms = timeout_ms;
  audit::PlanAudit result = audit::audit_plan(plan, library, options);
  if (save_cache && !cache_path.empty()) cache.save(cache_path);
  return result;
}

}  // namespace loom::cli
