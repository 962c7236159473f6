// NcclTransport under mpirun: point-to-point exchanges (with a message to itself), world sums and
// a group's sum, in float and double, checked against values computed on the host. NCCL needs a
// device per process, so with fewer devices than processes every test is skipped with the reason.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cuda_runtime_api.h>

#include <memory>
#include <numeric>

#include "loom/runtime/cuda/cuda_kernels.hpp"
#include "loom/runtime/cuda/nccl_transport.hpp"

namespace loom::runtime {
namespace {

int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

std::unique_ptr<NcclTransport>& shared_transport() {
  static std::unique_ptr<NcclTransport> transport;
  return transport;
}

class NcclTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto reason = cuda_unavailable_reason()) GTEST_SKIP() << *reason;
    int devices = 0;
    cudaGetDeviceCount(&devices);
    if (devices < world_size())
      GTEST_SKIP() << "NCCL needs one device per process: " << devices << " device(s) for " << world_size() << " processes";
    if (!shared_transport()) shared_transport() = std::make_unique<NcclTransport>(nullptr, nullptr);
    t = shared_transport().get();
  }
  NcclTransport* t = nullptr;
};

// A value only the sending rank would produce for element i.
double marker(int rank, std::size_t i) { return rank * 1000.0 + static_cast<double>(i) * 0.25; }

template <class T>
void check_exchange(NcclTransport& t) {
  const int n = t.size(), r = t.rank();
  const int next = (r + 1) % n, previous = (r + n - 1) % n;
  const std::size_t length = 1001;
  std::vector<Outgoing<T>> sends(2);
  sends[0].to = next;
  sends[1].to = r;
  for (std::size_t i = 0; i < length; ++i) {
    sends[0].data.push_back(static_cast<T>(marker(r, i)));
    sends[1].data.push_back(static_cast<T>(-marker(r, i)));
  }
  std::vector<T> from_previous(length), from_self(length);
  std::vector<Incoming<T>> receives{{previous, &from_previous}, {r, &from_self}};
  t.exchange(sends, receives);
  for (std::size_t i = 0; i < length; ++i) {
    ASSERT_EQ(from_previous[i], static_cast<T>(marker(previous, i))) << "element " << i;
    ASSERT_EQ(from_self[i], static_cast<T>(-marker(r, i))) << "element " << i;
  }
}

template <class T>
void check_sums(NcclTransport& t) {
  const int n = t.size(), r = t.rank();
  std::vector<T> values(777);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<T>(r + 1) * static_cast<T>(i % 13);
  t.sum(values);
  const T ranks = static_cast<T>(n * (n + 1) / 2);
  for (std::size_t i = 0; i < values.size(); ++i) ASSERT_EQ(values[i], ranks * static_cast<T>(i % 13)) << "element " << i;

  if (n < 2 || r > 1) return;  // the group {0, 1}: only its members sum
  std::vector<T> pair(5, static_cast<T>(r + 1));
  t.sum(pair, {0, 1});
  for (T v : pair) EXPECT_EQ(v, T(3));
}

TEST_F(NcclTransportTest, ExchangesFloatAndDouble) {
  check_exchange<float>(*t);
  check_exchange<double>(*t);
}

TEST_F(NcclTransportTest, SumsOverTheWorldAndAGroup) {
  check_sums<float>(*t);
  check_sums<double>(*t);
}

}  // namespace
}  // namespace loom::runtime

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  loom::runtime::shared_transport().reset();
  MPI_Finalize();
  return result;
}
