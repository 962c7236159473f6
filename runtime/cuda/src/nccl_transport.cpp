#include "loom/runtime/cuda/nccl_transport.hpp"

#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <memory>
#include <string>
#include <type_traits>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/cuda/device_buffer.hpp"
#include "loom/runtime/mpi_error.hpp"

namespace loom::runtime {
namespace {

using cuda::DeviceBuffer;

void check_nccl(ncclResult_t status, const char* call) {
  if (status == ncclSuccess) return;
  throw cuda::CudaError(std::string(call) + " failed: " + ncclGetErrorString(status));
}


template <class T>
constexpr ncclDataType_t nccl_type() {
  return std::is_same_v<T, float> ? ncclFloat32 : ncclFloat64;
}

// Every process of `comm` gets the same fresh id, made by the process of rank 0 in it.
ncclUniqueId shared_unique_id(MPI_Comm comm) {
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  ncclUniqueId id{};
  if (rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  check_mpi(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm), "MPI_Bcast");
  return id;
}

}  // namespace

NcclTransport::NcclTransport(int* argc, char*** argv) {
  int running = 0;
  MPI_Initialized(&running);
  if (!running) {
    check_mpi(MPI_Init(argc, argv), "MPI_Init");
    started_mpi_ = true;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
  int devices = 0;
  cuda::check_cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  if (devices == 0) throw cuda::CudaError("NcclTransport: cudaGetDeviceCount found no CUDA device");
  context_ = std::make_unique<cuda::CudaContext>(rank_ % devices);
  sum_context_ = std::make_unique<cuda::CudaContext>(rank_ % devices);
  const ncclUniqueId id = shared_unique_id(MPI_COMM_WORLD);
  check_nccl(ncclCommInitRank(&world_, size_, id, rank_), "ncclCommInitRank");
}

NcclTransport::~NcclTransport() {
  for (auto& [group, comm] : groups_) ncclCommDestroy(comm);
  for (auto& [group, comm] : started_groups_) ncclCommDestroy(comm);
  if (world_) ncclCommDestroy(world_);
  finish_started_.clear();
  sum_context_.reset();
  context_.reset();
  int finished = 0;
  MPI_Finalized(&finished);
  if (started_mpi_ && !finished) MPI_Finalize();
}

template <class T>
void NcclTransport::exchange_values(std::vector<Outgoing<T>>& sends, std::vector<Incoming<T>>& receives) {
  // Messages to this process itself are matched in order and copied on the host.
  std::vector<Outgoing<T>*> to_self;
  for (Outgoing<T>& s : sends)
    if (s.to == rank_) to_self.push_back(&s);
  std::size_t next_self = 0;
  std::vector<DeviceBuffer<T>> outgoing, incoming;
  std::vector<Incoming<T>*> received;
  outgoing.reserve(sends.size());
  incoming.reserve(receives.size());
  for (Incoming<T>& r : receives) {
    if (r.from == rank_) {
      if (next_self == to_self.size()) throw LoomError("NcclTransport: a receive from this process has no matching send");
      *r.into = std::move(to_self[next_self++]->data);
      continue;
    }
    incoming.emplace_back(*context_, r.into->size());
    received.push_back(&r);
  }
  for (Outgoing<T>& s : sends)
    if (s.to != rank_) outgoing.emplace_back(*context_, s.data);
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (std::size_t i = 0; i < received.size(); ++i)
    check_nccl(ncclRecv(incoming[i].data(), incoming[i].size(), nccl_type<T>(), received[i]->from, world_, context_->stream()),
               "ncclRecv");
  std::size_t k = 0;
  for (Outgoing<T>& s : sends)
    if (s.to != rank_) {
      check_nccl(ncclSend(outgoing[k].data(), outgoing[k].size(), nccl_type<T>(), s.to, world_, context_->stream()), "ncclSend");
      ++k;
    }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  for (std::size_t i = 0; i < received.size(); ++i) incoming[i].download(*received[i]->into);
  context_->synchronize();
}

template <class T>
void NcclTransport::sum_values(std::vector<T>& values, ncclComm* comm) {
  DeviceBuffer<T> buffer(*context_, values);
  check_nccl(ncclAllReduce(buffer.data(), buffer.data(), buffer.size(), nccl_type<T>(), ncclSum, comm, context_->stream()),
             "ncclAllReduce");
  buffer.download(values);
}

template <class T>
void NcclTransport::all_gather_values(std::vector<T>& values, const std::vector<int>& group) {
  ncclComm* comm = communicator(group);
  DeviceBuffer<T> mine(*context_, values);
  DeviceBuffer<T> all(*context_, values.size() * group.size());
  check_nccl(ncclAllGather(mine.data(), all.data(), mine.size(), nccl_type<T>(), comm, context_->stream()), "ncclAllGather");
  all.download(values);
}

template <class T>
void NcclTransport::reduce_scatter_values(std::vector<T>& values, const std::vector<int>& group) {
  if (values.size() % group.size() != 0)
    throw LoomError("NcclTransport::reduce_scatter: " + std::to_string(values.size()) + " values do not split into " +
                    std::to_string(group.size()) + " equal blocks");
  ncclComm* comm = communicator(group);
  DeviceBuffer<T> whole(*context_, values);
  DeviceBuffer<T> block(*context_, values.size() / group.size());
  check_nccl(ncclReduceScatter(whole.data(), block.data(), block.size(), nccl_type<T>(), ncclSum, comm, context_->stream()),
             "ncclReduceScatter");
  block.download(values);
}

template <class T>
void NcclTransport::start_sum_values(std::vector<T>& values, const std::vector<int>& group) {
  ncclComm* comm = started_sum_communicator(group);
  auto buffer = std::make_shared<DeviceBuffer<T>>(*sum_context_, values);
  check_nccl(ncclAllReduce(buffer->data(), buffer->data(), buffer->size(), nccl_type<T>(), ncclSum, comm, sum_context_->stream()),
             "ncclAllReduce");
  // A copy into pageable host memory returns only once done, so it waits for finish_sums.
  finish_started_.push_back([buffer, &values] { buffer->download(values); });
}

void NcclTransport::finish_sums() {
  for (const auto& finish : finish_started_) finish();
  finish_started_.clear();
}

ncclComm* NcclTransport::communicator(const std::vector<int>& group) {
  if (static_cast<int>(group.size()) == size_) return world_;
  if (auto it = groups_.find(group); it != groups_.end()) return it->second;
  return groups_.emplace(group, new_communicator(group)).first->second;
}

ncclComm* NcclTransport::started_sum_communicator(const std::vector<int>& group) {
  if (auto it = started_groups_.find(group); it != started_groups_.end()) return it->second;
  return started_groups_.emplace(group, new_communicator(group)).first->second;
}

ncclComm* NcclTransport::new_communicator(const std::vector<int>& group) {
  const auto self = std::find(group.begin(), group.end(), rank_);
  if (self == group.end()) throw LoomError("NcclTransport: rank " + std::to_string(rank_) + " runs a collective in a group it is not in");
  // An MPI communicator of the group's processes only (collective over them alone) hands the
  // group's NCCL id around.
  MPI_Group world = MPI_GROUP_NULL, members = MPI_GROUP_NULL;
  check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group");
  check_mpi(MPI_Group_incl(world, static_cast<int>(group.size()), group.data(), &members), "MPI_Group_incl");
  MPI_Comm mpi_comm = MPI_COMM_NULL;
  check_mpi(MPI_Comm_create_group(MPI_COMM_WORLD, members, 1, &mpi_comm), "MPI_Comm_create_group");
  MPI_Group_free(&members);
  MPI_Group_free(&world);
  ncclUniqueId id{};
  try {
    id = shared_unique_id(mpi_comm);
  } catch (...) {
    MPI_Comm_free(&mpi_comm);
    throw;
  }
  MPI_Comm_free(&mpi_comm);
  ncclComm* comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, static_cast<int>(group.size()), id, static_cast<int>(self - group.begin())),
             "ncclCommInitRank");
  return comm;
}

void NcclTransport::exchange(std::vector<Outgoing<float>>& sends, std::vector<Incoming<float>>& receives) {
  exchange_values(sends, receives);
}
void NcclTransport::exchange(std::vector<Outgoing<double>>& sends, std::vector<Incoming<double>>& receives) {
  exchange_values(sends, receives);
}
void NcclTransport::sum(std::vector<float>& values) { sum_values(values, world_); }
void NcclTransport::sum(std::vector<double>& values) { sum_values(values, world_); }
void NcclTransport::sum(std::vector<float>& values, const std::vector<int>& group) { sum_values(values, communicator(group)); }
void NcclTransport::sum(std::vector<double>& values, const std::vector<int>& group) { sum_values(values, communicator(group)); }
void NcclTransport::start_sum(std::vector<float>& values, const std::vector<int>& group) { start_sum_values(values, group); }
void NcclTransport::start_sum(std::vector<double>& values, const std::vector<int>& group) { start_sum_values(values, group); }
void NcclTransport::all_gather(std::vector<float>& values, const std::vector<int>& group) { all_gather_values(values, group); }
void NcclTransport::all_gather(std::vector<double>& values, const std::vector<int>& group) { all_gather_values(values, group); }
void NcclTransport::reduce_scatter(std::vector<float>& values, const std::vector<int>& group) { reduce_scatter_values(values, group); }
void NcclTransport::reduce_scatter(std::vector<double>& values, const std::vector<int>& group) { reduce_scatter_values(values, group); }

}  // namespace loom::runtime
