#include "loom/verifier/axiom_report.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "prover_pool.hpp"

namespace loom::verifier {

std::vector<std::string> AxiomReport::unused() const {
  std::vector<std::string> out;
  for (const auto& a : axioms)
    if (a.proofs == 0) out.push_back(a.axiom);
  return out;
}

unsigned retry_limit_ms(const pcg::Verification& proof, const VerifyOptions& options) {
  const auto scaled = static_cast<unsigned>(kRetryTimeFactor * proof.seconds * 1000);
  const unsigned limit = std::max(kMinRetryTimeoutMs, scaled);
  return options.timeout_ms == 0 ? limit : std::min(options.timeout_ms, limit);
}

AxiomReport axiom_report(const spec::Library& library, const AxiomSet& axioms, const std::vector<Obligation>& obligations,
                         const VerifyReport& report, const VerifyOptions& options) {
  AxiomReport out;
  std::map<std::string, std::size_t> index;
  for (const auto& a : axioms.axioms) {
    if (options.without.count(a.name())) continue;
    index[a.name()] = out.axioms.size();
    out.axioms.push_back({a.name(), 0, {}});
  }
  // One re-proof per (axiom, rule whose proof used it).
  std::vector<std::pair<std::size_t, std::size_t>> retries;
  for (std::size_t r = 0; r < obligations.size(); ++r) {
    const auto& v = report.verdicts.at(r).verification;
    if (v.status != pcg::VerificationStatus::Proved) continue;
    for (const auto& name : v.core) {
      auto it = index.find(name);
      if (it == index.end()) continue;
      ++out.axioms[it->second].proofs;
      retries.emplace_back(it->second, r);
    }
  }
  std::vector<char> still_proved(retries.size(), 0);  // not vector<bool>: written from several threads
  VerifyProgress progress;
  progress.total = retries.size();
  std::mutex mutex;
  const auto start = std::chrono::steady_clock::now();
  run_on_provers(library, axioms, options.jobs, retries.size(), [&](Prover& prover, std::size_t k) {
    auto without = options.without;
    without.insert(out.axioms[retries[k].first].axiom);
    still_proved[k] =
        prover.prove(obligations[retries[k].second], retry_limit_ms(report.verdicts[retries[k].second].verification, options), without)
            .proved;
    std::lock_guard lock(mutex);
    ++progress.done;
    ++(still_proved[k] ? progress.proved : progress.unknown);
    progress.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.progress) options.progress(progress);
  });
  for (std::size_t k = 0; k < retries.size(); ++k)
    if (!still_proved[k]) out.axioms[retries[k].first].needed_by.push_back(obligations[retries[k].second].name);
  return out;
}

}  // namespace loom::verifier
