#pragma once
// The plan audit as `train` and `simulate` run it: with the user's verification cache.
#include "loom/audit/plan_audit.hpp"

namespace loom::cli {

// Audits `plan`, proving again through the default result cache where records do not hold;
// writes the cache back when `save_cache` (one process of an MPI job does).
audit::PlanAudit audit_with_user_cache(const search::Plan& plan, const spec::Library& library, bool save_cache);

}  // namespace loom::cli
