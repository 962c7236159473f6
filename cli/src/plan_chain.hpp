#pragma once
// The plan audit as the commands run it: with a verification result cache.
#include <string>

#include "loom/audit/plan_audit.hpp"

namespace loom::cli {

// Audits `plan`, finding proofs in the result cache at `cache_path` (none when empty) before Z3;
// writes the cache back when `save_cache` (one process of an MPI job does).
audit::PlanAudit audit_with_cache(const search::Plan& plan, const spec::Library& library, const std::string& cache_path, bool save_cache,
                                  unsigned timeout_ms = 10000);

}  // namespace loom::cli
