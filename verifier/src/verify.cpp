#include "loom/verifier/verify.hpp"

#include <chrono>
#include <mutex>

#include "loom/verifier/fingerprint.hpp"
#include "prover_pool.hpp"

namespace loom::verifier {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

pcg::Verification decide(const spec::Library& library, Prover& prover, const Obligation& ob, const VerifyOptions& options) {
  const auto start = Clock::now();
  pcg::Verification v;
  // Z3 sees values only (parallel forms are functions it knows nothing of but the axioms), so the
  // sides' degrees are compared first, by the interpreter.
  if (auto mismatch = find_shape_mismatch(library, ob, options.counterexamples)) {
    v.status = pcg::VerificationStatus::Refuted;
    v.counterexample = std::move(mismatch->description);
    v.seconds = since(start);
    return v;
  }
  ProofResult proof = prover.prove(ob, options.timeout_ms, options.without, options.minimal_cores);
  if (proof.proved) {
    v.status = pcg::VerificationStatus::Proved;
    v.core = std::move(proof.core);
  } else if (auto counterexample = find_counterexample(library, ob, options.counterexamples)) {
    v.status = pcg::VerificationStatus::Refuted;
    v.counterexample = std::move(counterexample->description);
  } else {
    v.status = pcg::VerificationStatus::Unknown;
    v.reason = proof.reason + "; the interpreter found no counterexample";
  }
  v.seconds = since(start);
  return v;
}

}  // namespace

std::size_t VerifyReport::count(pcg::VerificationStatus status) const {
  std::size_t n = 0;
  for (const auto& v : verdicts) n += v.verification.status == status;
  return n;
}

CacheContext cache_context(const spec::Library& library, const AxiomSet& axioms, const VerifyOptions& options) {
  CacheContext context;
  context.forms = forms_fingerprint(library);
  for (const auto& a : axioms.axioms)
    if (!options.without.count(a.name())) {
      context.axioms[a.name()] = a.fingerprint;
      context.checked[a.name()] = a.checked_instances;
    }
  context.timeout_ms = options.timeout_ms;
  context.minimal_cores = options.minimal_cores;
  return context;
}

VerifyReport verify(const spec::Library& library, const AxiomSet& axioms, const std::vector<Obligation>& obligations,
                    const VerifyOptions& options) {
  const auto start = Clock::now();
  VerifyReport report;
  report.verdicts.resize(obligations.size());
  report.unusable_axioms = Prover(library, axioms).unusable_axioms();

  VerifyProgress progress;
  progress.total = obligations.size();
  std::mutex mutex;
  auto record = [&](std::size_t i, pcg::Verification v, bool cached) {
    std::lock_guard lock(mutex);
    switch (v.status) {
      case pcg::VerificationStatus::Proved: ++progress.proved; break;
      case pcg::VerificationStatus::Refuted: ++progress.refuted; break;
      case pcg::VerificationStatus::Unknown:
      case pcg::VerificationStatus::Stale: ++progress.unknown; break;
    }
    progress.cached += cached;
    ++progress.done;
    progress.seconds = since(start);
    report.verdicts[i] = {std::move(v), cached};
    if (options.progress) options.progress(progress);
  };

  const CacheContext context = cache_context(library, axioms, options);
  std::vector<std::size_t> todo;
  for (std::size_t i = 0; i < obligations.size(); ++i) {
    if (options.cache)
      if (auto hit = options.cache->lookup(obligations[i].key, context)) {
        record(i, std::move(*hit), true);
        continue;
      }
    todo.push_back(i);
  }
  run_on_provers(library, axioms, options.jobs, todo.size(), [&](Prover& prover, std::size_t k) {
    const std::size_t i = todo[k];
    record(i, decide(library, prover, obligations[i], options), false);
  });
  if (options.cache)
    for (std::size_t i : todo) options.cache->store(obligations[i].key, context, report.verdicts[i].verification);
  report.seconds = since(start);
  return report;
}

}  // namespace loom::verifier
