#include "loom/runtime/cuda/nccl_transport.hpp"

#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>

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

using Bytes = DeviceBuffer<std::byte>;

ncclDataType_t nccl_type(ElementType type) { return type == ElementType::Float32 ? ncclFloat32 : ncclFloat64; }

// The values copied to a new device buffer of their bytes, on `context`'s stream.
Bytes on_device(const cuda::CudaContext& context, const HostValues& values) {
  Bytes buffer(context, values.bytes());
  buffer.upload(static_cast<const std::byte*>(values.data), values.bytes());
  return buffer;
}

void download(const Bytes& buffer, const HostValues& values) { buffer.download(static_cast<std::byte*>(values.data), values.bytes()); }

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

NcclTransport::NcclTransport(int* argc, char*** argv, int device) {
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
  if (device < 0) device = rank_ % devices;
  if (device >= devices)
    throw cuda::CudaError("NcclTransport: device " + std::to_string(device) + " asked for, but " + std::to_string(devices) +
                          " CUDA devices are visible");
  context_ = std::make_unique<cuda::CudaContext>(device);
  sum_context_ = std::make_unique<cuda::CudaContext>(device);
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

void NcclTransport::move_values(const std::vector<Message>& sends, const std::vector<Message>& receives) {
  // Messages to this process itself are matched in order and copied on the host.
  std::vector<const Message*> to_self;
  for (const Message& s : sends)
    if (s.peer == rank_) to_self.push_back(&s);
  std::size_t next_self = 0;
  std::vector<Bytes> outgoing, incoming;
  std::vector<const Message*> received;
  outgoing.reserve(sends.size());
  incoming.reserve(receives.size());
  for (const Message& r : receives) {
    if (r.peer == rank_) {
      if (next_self == to_self.size()) throw LoomError("NcclTransport: a receive from this process has no matching send");
      const HostValues& sent = to_self[next_self++]->values;
      if (sent.type != r.values.type || sent.count != r.values.count)
        throw LoomError("NcclTransport: a message to this process has " + std::to_string(sent.count) + " values, its receive " +
                        std::to_string(r.values.count));
      if (sent.bytes() > 0) std::memcpy(r.values.data, sent.data, sent.bytes());
      continue;
    }
    incoming.emplace_back(*context_, r.values.bytes());
    received.push_back(&r);
  }
  for (const Message& s : sends)
    if (s.peer != rank_) outgoing.push_back(on_device(*context_, s.values));
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (std::size_t i = 0; i < received.size(); ++i)
    check_nccl(ncclRecv(incoming[i].data(), received[i]->values.count, nccl_type(received[i]->values.type), received[i]->peer, world_,
                        context_->stream()),
               "ncclRecv");
  std::size_t k = 0;
  for (const Message& s : sends)
    if (s.peer != rank_) {
      check_nccl(ncclSend(outgoing[k].data(), s.values.count, nccl_type(s.values.type), s.peer, world_, context_->stream()), "ncclSend");
      ++k;
    }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
  for (std::size_t i = 0; i < received.size(); ++i) download(incoming[i], received[i]->values);
  context_->synchronize();
}

void NcclTransport::sum_values(HostValues values, const std::vector<int>* group) {
  ncclComm* comm = group ? communicator(*group) : world_;
  Bytes buffer = on_device(*context_, values);
  check_nccl(ncclAllReduce(buffer.data(), buffer.data(), values.count, nccl_type(values.type), ncclSum, comm, context_->stream()),
             "ncclAllReduce");
  download(buffer, values);
}

void NcclTransport::gather_values(HostValues mine, HostValues all, const std::vector<int>& group) {
  check_blocks(mine, all, group, "NcclTransport::all_gather");
  ncclComm* comm = communicator(group);
  Bytes sent = on_device(*context_, mine);
  Bytes gathered(*context_, all.bytes());
  check_nccl(ncclAllGather(sent.data(), gathered.data(), mine.count, nccl_type(mine.type), comm, context_->stream()), "ncclAllGather");
  download(gathered, all);
}

void NcclTransport::scatter_sums(HostValues all, HostValues mine, const std::vector<int>& group) {
  check_blocks(mine, all, group, "NcclTransport::reduce_scatter");
  ncclComm* comm = communicator(group);
  Bytes whole = on_device(*context_, all);
  Bytes block(*context_, mine.bytes());
  check_nccl(ncclReduceScatter(whole.data(), block.data(), mine.count, nccl_type(all.type), ncclSum, comm, context_->stream()),
             "ncclReduceScatter");
  download(block, mine);
}

void NcclTransport::start_sum_values(HostValues values, const std::vector<int>& group) {
  ncclComm* comm = started_sum_communicator(group);
  auto buffer = std::make_shared<Bytes>(on_device(*sum_context_, values));
  check_nccl(ncclAllReduce(buffer->data(), buffer->data(), values.count, nccl_type(values.type), ncclSum, comm, sum_context_->stream()),
             "ncclAllReduce");
  // A copy into pageable host memory returns only once done, so it waits for finish_sums.
  finish_started_.push_back([buffer, values] { download(*buffer, values); });
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
  check_nccl(ncclCommInitRank(&comm, static_cast<int>(group.size()), id, static_cast<int>(self - group.begin())), "ncclCommInitRank");
  return comm;
}

}  // namespace loom::runtime
