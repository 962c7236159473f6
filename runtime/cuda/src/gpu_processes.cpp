#include "loom/runtime/cuda/gpu_processes.hpp"

#include <mpi.h>

#include <array>
#include <string>
#include <vector>

#include "loom/runtime/cuda/cuda_context.hpp"
#include "loom/runtime/cuda/cuda_kernels.hpp"
#include "loom/runtime/mpi_error.hpp"

namespace loom::runtime {

GpuPlacement place_processes_on_gpus() {
  if (const auto reason = cuda_unavailable_reason()) throw cuda::CudaError(*reason);
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int local_rank = 0, local_size = 1;
  check_mpi(MPI_Comm_rank(node, &local_rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(node, &local_size), "MPI_Comm_size");
  const int device = local_rank % visible_cuda_devices();
  constexpr std::size_t kIdBytes = 32;
  std::array<char, kIdBytes> mine{};
  cuda::check_cuda(cudaDeviceGetPCIBusId(mine.data(), static_cast<int>(kIdBytes), device), "cudaDeviceGetPCIBusId");
  std::vector<char> all(kIdBytes * static_cast<std::size_t>(local_size));
  check_mpi(MPI_Allgather(mine.data(), static_cast<int>(kIdBytes), MPI_CHAR, all.data(), static_cast<int>(kIdBytes), MPI_CHAR, node),
            "MPI_Allgather");
  MPI_Comm_free(&node);
  std::vector<std::string> gpus;
  for (int r = 0; r < local_size; ++r) gpus.emplace_back(all.data() + static_cast<std::size_t>(r) * kIdBytes);
  GpuPlacement place = place_on_gpus(gpus, local_rank, device);
  int nccl_here = place.nccl ? 1 : 0, nccl_everywhere = 0;
  check_mpi(MPI_Allreduce(&nccl_here, &nccl_everywhere, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD), "MPI_Allreduce");
  if (place.nccl && !nccl_everywhere) {
    place.nccl = false;
    place.why_not_nccl = "processes of another node share a GPU, and every process must move values the same way";
    place.first_on_node = false;  // the other node says why
  }
  return place;
}

}  // namespace loom::runtime
