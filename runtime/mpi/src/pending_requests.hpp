#pragma once
// Nonblocking MPI operations in flight, waited on with a deadline instead of MPI_Wait*, so that a
// rank that died or hung ends the job instead of leaving the others waiting forever.
#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include "loom/runtime/mpi_error.hpp"
#include "loom/runtime/rank_timeout.hpp"

namespace loom::runtime {

class PendingRequests {
 public:
  PendingRequests() = default;
  // Point-to-point requests still in flight here (an exception left the step) are cancelled and
  // freed, so MPI writes into no buffer that is gone. A collective's single request is never in
  // flight here: its wait ends done, in an error (done too), or in ending the job.
  ~PendingRequests();
  PendingRequests(const PendingRequests&) = delete;
  PendingRequests& operator=(const PendingRequests&) = delete;

  // The slot of the next request, filled by the MPI_I* call it is passed to; requests are
  // numbered in the order they are added.
  MPI_Request* add();
  // Polls until every request is done (true) or `timeout` passes with none finishing (false). A
  // request that ends in an error is a LoomError naming `call`.
  bool wait(Seconds timeout, const char* call);
  // Tests the requests once, without waiting: true when every one is done. Lets MPI advance them.
  bool done(const char* call);
  // The numbers of the requests not done.
  std::vector<std::size_t> pending() const;

 private:
  // One MPI_Testsome: how many requests it found done, or MPI_UNDEFINED when none was left.
  int test_some(const char* call);

  std::vector<MPI_Request> requests_;
  // MPI_Testsome's outputs, kept so that polling allocates nothing.
  std::vector<int> finished_;
  std::vector<MPI_Status> statuses_;
};

// Prints "loom: rank <rank>: <what>; a rank died or hung, ending the job" to stderr and calls
// MPI_Abort, so mpirun ends every process of the job.
[[noreturn]] void end_job(int rank, const std::string& what);

// "300 s", "2.5 s".
std::string seconds_text(Seconds duration);

}  // namespace loom::runtime
