#pragma once
// Runs tasks 0..count-1 on `jobs` threads, each with its own Prover (and so its own Z3 context).
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "loom/verifier/prover.hpp"

namespace loom::verifier {

template <class Task>
void run_on_provers(const spec::Library& library, const AxiomSet& axioms, int jobs, std::size_t count, Task&& task) {
  if (count == 0) return;
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    try {
      Prover prover(library, axioms);
      for (std::size_t i = next++; i < count; i = next++) task(prover, i);
    } catch (...) {
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = count;
    }
  };
  const std::size_t threads = std::clamp<std::size_t>(static_cast<std::size_t>(std::max(jobs, 1)), 1, count);
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace loom::verifier
