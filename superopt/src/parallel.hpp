#pragma once
// Runs `work(worker, item)` for items 0..count-1 on `jobs` threads, each taking the next item,
// while the calling thread reports progress. The first exception a worker throws is rethrown
// here after every thread has stopped.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loom/superopt/progress.hpp"

namespace loom::superopt {

template <class Work>
void parallel_for(std::size_t count, std::size_t jobs, const std::string& stage, const ProgressFn& progress, Work&& work) {
  std::atomic<std::size_t> next{0}, done{0}, finished_workers{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex, wake_mutex;
  std::condition_variable wake;
  auto run = [&](std::size_t worker) {
    for (;;) {
      if (failed) break;
      const std::size_t item = next++;
      if (item >= count) break;
      try {
        work(worker, item);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
        break;
      }
      ++done;
    }
    {
      std::lock_guard<std::mutex> lock(wake_mutex);
      ++finished_workers;
    }
    wake.notify_one();
  };
  if (jobs < 1) jobs = 1;
  if (progress) progress(stage, 0, count);
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < jobs; ++w) threads.emplace_back(run, w);
  {
    std::unique_lock<std::mutex> lock(wake_mutex);
    while (!wake.wait_for(lock, std::chrono::milliseconds(100), [&] { return finished_workers == jobs; }))
      if (progress) progress(stage, done, count);
  }
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
  if (progress) progress(stage, count, count);
}

}  // namespace loom::superopt
