#include "loom/runtime/mpi_transport.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <iterator>
#include <string>

#include "loom/pcg/diagnostic.hpp"
#include "pending_requests.hpp"

namespace loom::runtime {
namespace {

// Tags keep apart what could otherwise match each other's receives between the same two ranks.
constexpr int message_tag = 0;
constexpr int group_creation_tag = 1;
constexpr int group_meeting_tag = 2;
// The messages of channel c > 0 (Transport::use_channel) take tag channel_tags + c.
constexpr int channel_tags = 16;
int message_tag_of(int channel) { return channel == 0 ? message_tag : channel_tags + channel; }

MPI_Datatype datatype(ElementType type) { return type == ElementType::Float32 ? MPI_FLOAT : MPI_DOUBLE; }

int element_count(std::size_t size, const char* where) {
  if (size > static_cast<std::size_t>(INT_MAX))
    throw LoomError(std::string(where) + ": a buffer of " + std::to_string(size) + " values is more than one MPI call can move");
  return static_cast<int>(size);
}

std::string counted(std::size_t count, const std::string& noun) { return std::to_string(count) + " " + noun + (count == 1 ? "" : "s"); }

// "rank 1", "ranks 1, 3".
std::string ranks_text(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i == 0 ? "" : ", ") + std::to_string(ranks[i]);
  return text;
}

// What a timed-out point-to-point step still waits on, for requests added receives first, then
// sends: "no message from rank 1", else "no message taken by rank 1" (a send the peer never
// received).
std::string missing_messages(const PendingRequests& requests, const std::vector<int>& receive_from, const std::vector<int>& send_to) {
  std::vector<int> unheard, not_taking;
  for (std::size_t i : requests.pending()) {
    if (i < receive_from.size())
      unheard.push_back(receive_from[i]);
    else
      not_taking.push_back(send_to[i - receive_from.size()]);
  }
  return unheard.empty() ? "no message taken by " + ranks_text(not_taking) : "no message from " + ranks_text(unheard);
}

// Polls a collective's request under the rank timeout, as every wait on other ranks is; past it
// ends the job saying `what` was not done.
void await_collective(PendingRequests& request, Seconds timeout, int rank, const char* call, const std::string& what) {
  if (!request.wait(timeout, call)) end_job(rank, what + " not done after " + seconds_text(timeout));
}

}  // namespace

MpiTransport::MpiTransport(int* argc, char*** argv, Seconds timeout) : timeout_(rank_timeout(std::getenv(rank_timeout_variable), timeout)) {
  int started = 0;
  MPI_Initialized(&started);
  if (!started) MPI_Init(argc, argv);
  // Errors come back as codes and become LoomErrors naming the call, instead of aborting silently.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiTransport::~MpiTransport() {
  int finished = 0;
  MPI_Finalized(&finished);
  if (finished) return;
  // MPI_Finalize waits for every rank with no deadline; meeting them all first bounds that wait.
  try {
    PendingRequests barrier;
    check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, barrier.add()), "MpiTransport: MPI_Ibarrier");
    if (!barrier.wait(timeout_, "MpiTransport: MPI_Ibarrier"))
      end_job(rank_, "not every rank reached the end of the run after " + seconds_text(timeout_));
  } catch (const LoomError&) {
    // A destructor cannot throw; MPI_Finalize meets the ranks anyway.
  }
  started_sums_.reset();  // its requests go back to MPI while MPI still runs
  sent_.reset();
  for (auto& [group, handle] : groups_) {
    MPI_Comm comm = MPI_Comm_f2c(handle);
    MPI_Comm_free(&comm);
  }
  MPI_Finalize();
}

void MpiTransport::check_rank(int peer, const char* where) const {
  if (peer < 0 || peer >= size_)
    throw LoomError(std::string("MpiTransport::") + where + " rank " + std::to_string(peer) + ", but the run has ranks 0 to " +
                    std::to_string(size_ - 1));
}

void MpiTransport::check_group(const std::vector<int>& group, const char* operation) const {
  const std::string where = std::string("MpiTransport::") + operation + " over the group " + group_text(group) + ": ";
  if (group.empty()) throw LoomError(where + "the group is empty");
  if (std::adjacent_find(group.begin(), group.end(), [](int a, int b) { return a >= b; }) != group.end())
    throw LoomError(where + "ranks must be distinct and ascending");
  if (group.front() < 0 || group.back() >= size_) throw LoomError(where + "the run has ranks 0 to " + std::to_string(size_ - 1));
  if (!std::binary_search(group.begin(), group.end(), rank_))
    throw LoomError(where + "this process, rank " + std::to_string(rank_) + ", is not in it");
}

void MpiTransport::move_values(const std::vector<Message>& sends, const std::vector<Message>& receives) {
  std::vector<int> receive_from, send_to;
  for (const Message& r : receives) {
    check_rank(r.peer, "exchange: a message from");
    receive_from.push_back(r.peer);
  }
  for (const Message& s : sends) {
    check_rank(s.peer, "exchange: a message to");
    send_to.push_back(s.peer);
  }
  PendingRequests requests;
  for (const Message& r : receives)
    check_mpi(MPI_Irecv(r.values.data, element_count(r.values.count, "MpiTransport::exchange"), datatype(r.values.type), r.peer,
                        message_tag_of(channel_), MPI_COMM_WORLD, requests.add()),
              "MpiTransport::exchange: MPI_Irecv");
  for (const Message& s : sends) {
    void* values = s.values.data;
    MPI_Request* request = nullptr;
    if (send_ahead_) {
      const char* from = static_cast<const char*>(s.values.data);
      values = sent_values_.emplace_back(from, from + s.values.bytes()).data();
      if (!sent_) sent_ = std::make_unique<PendingRequests>();
      request = sent_->add();
      sent_to_.push_back(s.peer);
    } else {
      request = requests.add();
    }
    check_mpi(MPI_Isend(values, element_count(s.values.count, "MpiTransport::exchange"), datatype(s.values.type), s.peer,
                        message_tag_of(channel_), MPI_COMM_WORLD, request),
              "MpiTransport::exchange: MPI_Isend");
  }
  if (requests.wait(timeout_, "MpiTransport::exchange: MPI_Testsome")) return;
  end_job(rank_, missing_messages(requests, receive_from, send_to) + " after " + seconds_text(timeout_) + " (exchange of " +
                     counted(sends.size() + receives.size(), "message") + ")");
}

void MpiTransport::send_ahead(bool on) {
  send_ahead_ = on;
  if (on) return;
  sent_.reset();  // cancels and frees the requests before their buffers go
  sent_values_.clear();
  sent_to_.clear();
}

void MpiTransport::use_channel(int channel) {
  if (channel < 0 || channel >= kChannels)
    throw LoomError("MpiTransport::use_channel: channel " + std::to_string(channel) + " is not one of 0 to " +
                    std::to_string(kChannels - 1));
  channel_ = channel;
}

void MpiTransport::finish_sends() {
  if (!sent_) return;
  if (!sent_->wait(timeout_, "MpiTransport::finish_sends: MPI_Testsome")) {
    end_job(rank_, missing_messages(*sent_, {}, sent_to_) + " after " + seconds_text(timeout_) + " (" +
                       counted(sent_->pending().size(), "message") + " sent ahead)");
  }
  sent_.reset();
  sent_values_.clear();
  sent_to_.clear();
}

void MpiTransport::sum_values(HostValues values, const std::vector<int>* group) {
  const int handle = group ? communicator(*group, "sum") : MPI_Comm_c2f(MPI_COMM_WORLD);
  const std::string over_whom = group ? "the group " + group_text(*group) : "all " + counted(static_cast<std::size_t>(size_), "rank");
  PendingRequests request;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, values.data, element_count(values.count, "MpiTransport::sum"), datatype(values.type), MPI_SUM,
                           MPI_Comm_f2c(handle), request.add()),
            "MpiTransport::sum: MPI_Iallreduce");
  await_collective(request, timeout_, rank_, "MpiTransport::sum: MPI_Testsome",
                   "sum of " + counted(values.count, "value") + " over " + over_whom);
}

void MpiTransport::start_sum_values(HostValues values, const std::vector<int>& group) {
  const int handle = communicator(group, "start_sum");
  if (!started_sums_) started_sums_ = std::make_unique<PendingRequests>();
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, values.data, element_count(values.count, "MpiTransport::start_sum"), datatype(values.type),
                           MPI_SUM, MPI_Comm_f2c(handle), started_sums_->add()),
            "MpiTransport::start_sum: MPI_Iallreduce");
  started_what_.push_back("sum of " + counted(values.count, "value") + " over the group " + group_text(group));
}

void MpiTransport::progress() {
  if (started_sums_) started_sums_->done("MpiTransport::progress: MPI_Testsome");
}

void MpiTransport::finish_sums() {
  if (!started_sums_) return;
  if (!started_sums_->wait(timeout_, "MpiTransport::finish_sums: MPI_Testsome")) {
    const std::vector<std::size_t> pending = started_sums_->pending();
    end_job(rank_, started_what_[pending.front()] + " not done after " + seconds_text(timeout_) + " (" + std::to_string(pending.size()) +
                       " of " + counted(started_what_.size(), "started sum") + " pending)");
  }
  started_sums_.reset();
  started_what_.clear();
}

void MpiTransport::gather_values(HostValues mine, HostValues all, const std::vector<int>& group) {
  check_blocks(mine, all, group, "MpiTransport::all_gather");
  const int handle = communicator(group, "all_gather");
  const int count = element_count(mine.count, "MpiTransport::all_gather");
  PendingRequests request;
  check_mpi(MPI_Iallgather(mine.data, count, datatype(mine.type), all.data, count, datatype(all.type), MPI_Comm_f2c(handle), request.add()),
            "MpiTransport::all_gather: MPI_Iallgather");
  await_collective(request, timeout_, rank_, "MpiTransport::all_gather: MPI_Testsome",
                   "all-gather of " + counted(mine.count, "value") + " over the group " + group_text(group));
}

void MpiTransport::scatter_sums(HostValues all, HostValues mine, const std::vector<int>& group) {
  check_blocks(mine, all, group, "MpiTransport::reduce_scatter");
  const int handle = communicator(group, "reduce_scatter");
  PendingRequests request;
  check_mpi(MPI_Ireduce_scatter_block(all.data, mine.data, element_count(mine.count, "MpiTransport::reduce_scatter"), datatype(all.type),
                                      MPI_SUM, MPI_Comm_f2c(handle), request.add()),
            "MpiTransport::reduce_scatter: MPI_Ireduce_scatter_block");
  await_collective(request, timeout_, rank_, "MpiTransport::reduce_scatter: MPI_Testsome",
                   "reduce-scatter of " + counted(all.count, "value") + " over the group " + group_text(group));
}

void MpiTransport::swap_blocks(HostValues mine, HostValues theirs, const std::vector<int>& group) {
  check_swap(mine, theirs, group, "MpiTransport::all_to_all");
  const int handle = communicator(group, "all_to_all");
  const int count = element_count(mine.count / group.size(), "MpiTransport::all_to_all");
  PendingRequests request;
  check_mpi(
      MPI_Ialltoall(mine.data, count, datatype(mine.type), theirs.data, count, datatype(theirs.type), MPI_Comm_f2c(handle), request.add()),
      "MpiTransport::all_to_all: MPI_Ialltoall");
  await_collective(request, timeout_, rank_, "MpiTransport::all_to_all: MPI_Testsome",
                   "all-to-all of " + counted(mine.count, "value") + " over the group " + group_text(group));
}

int MpiTransport::communicator(const std::vector<int>& group, const char* operation) {
  if (auto it = groups_.find(group); it != groups_.end()) return it->second;
  check_group(group, operation);
  if (static_cast<int>(group.size()) == size_) return MPI_Comm_c2f(MPI_COMM_WORLD);
  // MPI_Comm_create_group blocks until every member calls it and has no nonblocking form. Meeting
  // the members first, under the deadline, leaves it waiting only on members already there.
  const std::string where = std::string("MpiTransport::") + operation;
  std::vector<int> peers;
  std::copy_if(group.begin(), group.end(), std::back_inserter(peers), [this](int r) { return r != rank_; });
  PendingRequests meeting;
  for (int peer : peers)
    check_mpi(MPI_Irecv(nullptr, 0, MPI_BYTE, peer, group_meeting_tag, MPI_COMM_WORLD, meeting.add()), (where + ": MPI_Irecv").c_str());
  for (int peer : peers)
    check_mpi(MPI_Isend(nullptr, 0, MPI_BYTE, peer, group_meeting_tag, MPI_COMM_WORLD, meeting.add()), (where + ": MPI_Isend").c_str());
  if (!meeting.wait(timeout_, (where + ": MPI_Testsome").c_str()))
    end_job(rank_, missing_messages(meeting, peers, peers) + " after " + seconds_text(timeout_) + " (forming the group " +
                       group_text(group) + (std::string("aeiou").find(operation[0]) == std::string::npos ? " for a " : " for an ") +
                       operation + ")");

  MPI_Group world = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  const int included = MPI_Group_incl(world, static_cast<int>(group.size()), group.data(), &members);
  MPI_Comm comm = MPI_COMM_NULL;
  const int created = included == MPI_SUCCESS ? MPI_Comm_create_group(MPI_COMM_WORLD, members, group_creation_tag, &comm) : included;
  if (members != MPI_GROUP_NULL) MPI_Group_free(&members);
  MPI_Group_free(&world);
  check_mpi(created, (where + ": MPI_Comm_create_group").c_str());
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  const int handle = MPI_Comm_c2f(comm);
  groups_.emplace(group, handle);
  return handle;
}

}  // namespace loom::runtime
