#pragma once
// The transport of a GPU run launched with mpirun: one process per device (the one it is given, by
// default its rank modulo the visible devices), values moved by NCCL between device buffers. MPI
// only starts the processes and hands every communicator's ncclUniqueId around. Host vectors are staged through the
// device: exchange() is ncclSend / ncclRecv in one group, sum() ncclAllReduce, all_gather()
// ncclAllGather, reduce_scatter() ncclReduceScatter, and a group's collectives run on a
// communicator of its own, made the first time the group runs one.
//
// Started sums run on a stream of their own, so they overlap the kernels on the compute stream:
// start_sum stages the values to the device and queues ncclAllReduce there, finish_sums copies the
// results back. They use communicators of their own too, so an operation on the compute stream
// never waits in one communicator behind a sum still queued on the other stream.
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "loom/runtime/cuda/cuda_context.hpp"
#include "loom/runtime/transport.hpp"

struct ncclComm;

namespace loom::runtime {

class NcclTransport final : public Transport {
 public:
  // Starts MPI unless it is running already (it is then left running on destruction). `device`:
  // the GPU this process takes (place_processes_on_gpus), or -1 for its rank modulo the GPUs.
  NcclTransport(int* argc, char*** argv, int device = -1);
  ~NcclTransport() override;
  NcclTransport(const NcclTransport&) = delete;
  NcclTransport& operator=(const NcclTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const { return context_->device(); }
  void move_values(const std::vector<Message>& sends, const std::vector<Message>& receives) override;
  void sum_values(HostValues values, const std::vector<int>* group) override;
  void gather_values(HostValues mine, HostValues all, const std::vector<int>& group) override;
  void scatter_sums(HostValues all, HostValues mine, const std::vector<int>& group) override;
  void start_sum_values(HostValues values, const std::vector<int>& group) override;
  void finish_sums() override;

 private:
  // The group's communicator for operations on the compute stream (`groups_`) or for started
  // sums (`started_groups_`), made the first time it is asked for.
  ncclComm* communicator(const std::vector<int>& group);
  ncclComm* started_sum_communicator(const std::vector<int>& group);
  ncclComm* new_communicator(const std::vector<int>& group);

  int rank_ = 0;
  int size_ = 1;
  bool started_mpi_ = false;
  std::unique_ptr<cuda::CudaContext> context_;
  ncclComm* world_ = nullptr;
  std::map<std::vector<int>, ncclComm*> groups_;
  std::unique_ptr<cuda::CudaContext> sum_context_;  // the started sums' stream
  std::map<std::vector<int>, ncclComm*> started_groups_;
  std::vector<std::function<void()>> finish_started_;  // per started sum: copies its result back
};

}  // namespace loom::runtime
