#pragma once
// The plan audit as the commands run it: with a verification result cache.
#include <string>

#include "loom/audit/plan_audit.hpp"

namespace loom::cli {

// Binds each of the plan's substitutions to the content of the rule it names (verifier::rule_hash),
// as the audit checks it.
void bind_rule_hashes(search::Plan& plan, const spec::Library& library);

// Audits `plan`, finding proofs in the result cache at `cache_path` (none when empty) before Z3;
// writes the cache back when `save_cache` (one process of an MPI job does).
audit::PlanAudit audit_with_cache(const search::Plan& plan, const spec::Library& library, const std::string& cache_path, bool save_cache,
                                  unsigned timeout_ms = 10000);

}  // namespace loom::cli
