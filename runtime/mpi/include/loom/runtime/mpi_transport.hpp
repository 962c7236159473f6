#pragma once
// The transport of a run launched with mpirun: one process per device, messages as MPI
// point-to-point sends and receives, sums, all-gathers and reduce-scatters as the MPI collectives.
// MPI is started on construction and finished on destruction.
//
// No wait on other ranks blocks forever: exchanges, collectives, forming a group and the end of the
// run are nonblocking MPI operations polled until done or until `timeout` passes. Past it the process
// prints one line to stderr naming itself and what it waited for, e.g.
//   loom: rank 0: no message from rank 1 after 300 s (exchange of 2 messages); a rank died or hung, ending the job
// and calls MPI_Abort, so mpirun ends every process and exits non-zero. The timeout is the
// constructor's (300 s unless the program passes another), or, when the environment variable
// LOOM_RANK_TIMEOUT is set, its value in seconds ("30", "2.5"). A rank that exits or is killed
// ends the job through mpirun.
// MPI errors come back as LoomErrors naming the call.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/runtime/rank_timeout.hpp"
#include "loom/runtime/transport.hpp"

namespace loom::runtime {

class PendingRequests;

class MpiTransport final : public Transport {
 public:
  MpiTransport(int* argc, char*** argv, Seconds timeout = default_rank_timeout);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // How long one wait on other ranks may take before the job is ended.
  Seconds timeout() const { return timeout_; }
  void move_values(const std::vector<Message>& sends, const std::vector<Message>& receives) override;
  void sum_values(HostValues values, const std::vector<int>* group) override;
  void gather_values(HostValues mine, HostValues all, const std::vector<int>& group) override;
  void scatter_sums(HostValues all, HostValues mine, const std::vector<int>& group) override;
  void swap_blocks(HostValues mine, HostValues theirs, const std::vector<int>& group) override;
  // Started sums are MPI_Iallreduce calls, advanced by progress() and finished under the timeout.
  void start_sum_values(HostValues values, const std::vector<int>& group) override;
  void progress() override;
  void finish_sums() override;
  // Sends ahead are MPI_Isend calls from copies of their values, finished under the timeout.
  // Turning it off cancels those that finish_sends did not finish (an error ended the step).
  void send_ahead(bool on) override;
  bool can_send_ahead() const override { return true; }
  // A channel is a message tag.
  void use_channel(int channel) override;
  void finish_sends() override;

 private:
  // A communicator per group of ranks, made the first time the group runs a collective (`operation`
  // names it in errors). Communicators are kept as their Fortran handles (MPI_Comm_c2f), plain
  // integers in every MPI, so this header needs no mpi.h.
  int communicator(const std::vector<int>& group, const char* operation);
  void check_group(const std::vector<int>& group, const char* operation) const;
  void check_rank(int peer, const char* where) const;

  std::map<std::vector<int>, int> groups_;
  std::unique_ptr<PendingRequests> started_sums_;  // null when none is in flight
  std::vector<std::string> started_what_;          // per started sum, what it sums, for a timeout's message
  bool send_ahead_ = false;
  int channel_ = 0;
  std::vector<std::vector<char>> sent_values_;  // copies of the sends in flight, which MPI reads until they are done
  std::unique_ptr<PendingRequests> sent_;       // null when no send is in flight
  std::vector<int> sent_to_;                    // per send in flight, its receiver
  Seconds timeout_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace loom::runtime
