#include "pending_requests.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {
namespace {

// The pause between two polls: yields for the first 20 ms, for peers that answer within that (a
// yield still hands the core to a peer when runs have more ranks than cores, and costs no sleep
// granularity), then sleeps doubling from 20 us up to 0.5 ms, so a rank that waits long leaves the
// core to the ranks it waits for.
class PollBackoff {
 public:
  void pause() {
    if (std::chrono::steady_clock::now() - started_ < yield_for) {
      std::this_thread::yield();
      return;
    }
    std::this_thread::sleep_for(sleep_);
    sleep_ = std::min(sleep_ * 2, max_sleep);
  }
  void restart() { *this = PollBackoff(); }

 private:
  static constexpr std::chrono::milliseconds yield_for{20};
  static constexpr std::chrono::microseconds max_sleep{500};
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::microseconds sleep_{20};
};

// Far enough for any run, near enough that adding it to steady_clock's now cannot overflow.
constexpr Seconds longest_wait{1e8};

}  // namespace

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw LoomError(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

PendingRequests::~PendingRequests() {
  for (MPI_Request& request : requests_) {
    if (request == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&request);
    MPI_Request_free(&request);
  }
}

MPI_Request* PendingRequests::add() {
  requests_.push_back(MPI_REQUEST_NULL);
  return &requests_.back();
}

int PendingRequests::test_some(const char* call) {
  finished_.resize(requests_.size());
  statuses_.resize(requests_.size());
  int newly_done = 0;
  // Testsome frees the requests it finds done (they become MPI_REQUEST_NULL), so what is left in
  // requests_ is what is pending; it reports MPI_UNDEFINED once none is left.
  const int code = MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &newly_done, finished_.data(), statuses_.data());
  if (code == MPI_ERR_IN_STATUS)
    for (int i = 0; i < newly_done; ++i) check_mpi(statuses_[static_cast<std::size_t>(i)].MPI_ERROR, call);
  check_mpi(code, call);
  return newly_done;
}

bool PendingRequests::wait(Seconds timeout, const char* call) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::min(timeout, longest_wait));
  PollBackoff backoff;
  for (;;) {
    const int newly_done = test_some(call);
    if (newly_done == MPI_UNDEFINED) return true;
    if (newly_done > 0) {
      backoff.restart();
    } else if (std::chrono::steady_clock::now() >= deadline) {
      return false;
    } else {
      backoff.pause();
    }
  }
}

bool PendingRequests::done(const char* call) { return test_some(call) == MPI_UNDEFINED; }

std::vector<std::size_t> PendingRequests::pending() const {
  std::vector<std::size_t> numbers;
  for (std::size_t i = 0; i < requests_.size(); ++i)
    if (requests_[i] != MPI_REQUEST_NULL) numbers.push_back(i);
  return numbers;
}

void end_job(int rank, const std::string& what) {
  std::fprintf(stderr, "loom: rank %d: %s; a rank died or hung, ending the job\n", rank, what.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::_Exit(2);  // MPI_Abort does not come back; this keeps [[noreturn]] true if it ever did
}

std::string seconds_text(Seconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", duration.count());
  return text;
}

}  // namespace loom::runtime
