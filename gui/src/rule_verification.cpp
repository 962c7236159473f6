#include "loom/gui/rule_verification.hpp"

#include <algorithm>
#include <thread>

#include "loom/verifier/axiom_set.hpp"
#include "loom/verifier/proof_record.hpp"
#include "loom/verifier/result_cache.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/verify.hpp"

namespace loom::gui {

void verify_rules(const spec::Library& library, const std::vector<pcg::Rule>& rules, VerifyRun& run, const std::atomic<bool>& cancelled,
                  const std::function<void(const VerifyCounts&)>& progress) {
  const verifier::AxiomSet axioms = verifier::prepare_axioms(library);
  std::vector<verifier::Obligation> obligations;
  for (std::size_t i : run.which)
    obligations.push_back(verifier::obligation_from_rule(rules.at(i), library, "rules[" + std::to_string(i) + "]"));
  verifier::ResultCache cache = run.cache_path.empty() ? verifier::ResultCache{} : verifier::ResultCache::load(run.cache_path);

  verifier::VerifyOptions options;
  options.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  options.minimal_cores = true;
  options.cache = run.cache_path.empty() ? nullptr : &cache;
  VerifyCounts counts;
  counts.total = obligations.size();
  const std::size_t batch = static_cast<std::size_t>(options.jobs) * 2;
  for (std::size_t first = 0; first < obligations.size() && !cancelled; first += batch) {
    const std::vector<verifier::Obligation> part(
        obligations.begin() + static_cast<std::ptrdiff_t>(first),
        obligations.begin() + static_cast<std::ptrdiff_t>(std::min(first + batch, obligations.size())));
    const verifier::VerifyReport report = verifier::verify(library, axioms, part, options);
    for (const verifier::Verdict& v : report.verdicts) {
      pcg::Verification bound = v.verification;
      verifier::bind_record(bound, rules.at(run.which[run.results.size()]), library, axioms);
      run.results.push_back(std::move(bound));
      ++counts.done;
      counts.proved += v.verification.status == pcg::VerificationStatus::Proved;
      counts.refuted += v.verification.status == pcg::VerificationStatus::Refuted;
      counts.unknown += v.verification.status == pcg::VerificationStatus::Unknown;
    }
    if (progress) progress(counts);
  }
  if (!run.cache_path.empty()) cache.save(run.cache_path);
}

}  // namespace loom::gui
