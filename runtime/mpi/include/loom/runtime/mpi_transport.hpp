#pragma once
// The transport of a run launched with mpirun: one process per device, messages as MPI
// point-to-point sends and receives, sums as MPI_Allreduce. MPI is started on construction and
// finished on destruction.
#include "loom/runtime/transport.hpp"

namespace loom::runtime {

class MpiTransport final : public Transport {
 public:
  MpiTransport(int* argc, char*** argv);
  ~MpiTransport() override;
  MpiTransport(const MpiTransport&) = delete;
  MpiTransport& operator=(const MpiTransport&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void exchange(std::vector<Outgoing<float>>& sends, std::vector<Incoming<float>>& receives) override;
  void exchange(std::vector<Outgoing<double>>& sends, std::vector<Incoming<double>>& receives) override;
  void sum(std::vector<float>& values) override;
  void sum(std::vector<double>& values) override;

 private:
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace loom::runtime
