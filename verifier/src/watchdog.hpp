#pragma once
// A time limit for Z3 checks that interrupts the context from a thread of its own. (Z3's own
// "timeout" parameter starts a timer per check whose handshake spins, which is slow when the
// cores are busy; one waiting thread per context costs nothing between checks.)
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include <z3++.h>

namespace loom::verifier {

class Watchdog {
 public:
  explicit Watchdog(z3::context& context) : context_(context), thread_([this] { run(); }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Interrupts the context's check unless disarm() comes within `ms` milliseconds (0: never).
  void arm(unsigned ms) {
    {
      std::lock_guard lock(mutex_);
      deadline_.reset();
      if (ms > 0) deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    }
    wake_.notify_one();
  }
  void disarm() {
    std::lock_guard lock(mutex_);
    deadline_.reset();
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
      if (!deadline_) {
        wake_.wait(lock);
      } else if (wake_.wait_until(lock, *deadline_) == std::cv_status::timeout && deadline_ &&
                 std::chrono::steady_clock::now() >= *deadline_) {
        context_.interrupt();  // a no-op unless a check is running
        deadline_.reset();
      }
    }
  }

  z3::context& context_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<std::chrono::steady_clock::time_point> deadline_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace loom::verifier
