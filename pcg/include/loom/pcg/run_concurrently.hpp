#pragma once
// Independent pieces of work shared out over a few threads.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace loom::pcg {

// Runs task(state, i) for every i in 0..count-1 on up to `jobs` threads, the calling thread among
// them, each thread with its own `state` made by make_state(); each thread takes the lowest index
// not yet taken, so with one job the tasks run in order on the calling thread. The first exception
// thrown stops the tasks not yet begun and is rethrown here once every thread has stopped.
template <class MakeState, class Task>
void run_concurrently(int jobs, std::size_t count, MakeState&& make_state, Task&& task) {
  if (count == 0) return;
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    try {
      auto state = make_state();
      for (std::size_t i = next++; i < count; i = next++) task(state, i);
    } catch (...) {
      std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = count;
    }
  };
  const std::size_t threads = std::clamp<std::size_t>(static_cast<std::size_t>(std::max(jobs, 1)), 1, count);
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (std::size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // no more threads to be had: those running take the rest
    }
  }
  worker();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace loom::pcg
