// Measures this host as a machine for simulating runs with one CPU core per rank, and prints it
// as a Loom machine file (specs/machines/cpu_host.json holds one such run):
//   peak FLOP/s     single-threaded Eigen float GEMM, best of several
//   memory GB/s     memcpy of a buffer far larger than the caches, bytes read plus written
//   kernel overhead the runtime's relu kernel on one element (what every task pays)
//   dispatch        the executor's own time per task outside its kernel, forward and backward,
//                   over a chain of relus on a few elements
//   links           ping-pong between ranks 0 and 1 through the runtime's MPI transport:
//                   latency from 4-byte messages, bandwidth from 16 MiB ones
// Run as `mpirun -np 2 loom_calibrate_host`; with one process the links are left out of the
// measurement and copy the memory figures.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include <unistd.h>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "loom/runtime/kernel_registry.hpp"
#include "loom/runtime/mpi_transport.hpp"
#include "loom/runtime/sharded_executor.hpp"
#include "loom/search/machine.hpp"
#include "bench_support.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The fastest of `repeats` runs of `body`, in seconds.
template <class Body>
double best_of(int repeats, Body body) {
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    body();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

double gemm_flops() {
  Eigen::setNbThreads(1);
  constexpr int n = 512;
  const Eigen::MatrixXf a = Eigen::MatrixXf::Random(n, n), b = Eigen::MatrixXf::Random(n, n);
  Eigen::MatrixXf c(n, n);
  const double seconds = best_of(10, [&] { c.noalias() = a * b; });
  if (c(0, 0) == 12345.f) std::cerr << "";  // keeps the product alive
  return 2.0 * n * n * n / seconds;
}

double memcpy_bandwidth() {
  constexpr std::size_t bytes = std::size_t{256} << 20;
  std::vector<char> from(bytes, 1), to(bytes, 0);
  const double seconds = best_of(5, [&] { std::memcpy(to.data(), from.data(), bytes); });
  if (to[bytes / 2] != 1) std::cerr << "memcpy lost data\n";
  return 2.0 * static_cast<double>(bytes) / seconds;
}

double kernel_overhead() {
  using namespace loom::runtime;
  const Kernel<float>* relu = builtin_kernels().find<float>("relu", Backend::Cpu);
  Tensor<float> x(std::vector<std::int64_t>{1, 1});
  OpCall<float> call{"relu", {}, {&x}, {}, {}, {}};
  constexpr int calls = 10000;
  return best_of(5, [&] {
           for (int i = 0; i < calls; ++i) relu->forward(call);
         }) /
         calls;
}

double dispatch_overhead() {
  constexpr std::int64_t side = 4;
  using namespace loom::runtime;
  constexpr int chain = 64;
  loom::pcg::Graph g;
  int last = g.add_input("x", loom::pcg::ParallelShape::unpartitioned({side, side}));
  for (int i = 0; i < chain; ++i) last = g.add_node(loom::bench::library(), "relu", {}, {{last, 0}});
  g.mark_output({last, 0});
  LocalTransport one;
  ShardedExecutor<float> executor(loom::bench::library(), g, builtin_kernels(), one, {"x"}, 1);
  const NamedTensors<float> feeds{{"x", Tensor<float>({side, side}, 1.f)}};
  const std::vector<Tensor<float>> output_grad{Tensor<float>({side, side}, 1.f)};
  constexpr int steps = 200;
  double best = 1e300;
  for (int r = 0; r < 5; ++r) {
    double kernels_before = 0;
    for (const OperatorTime& t : executor.operator_times()) kernels_before += t.forward_seconds + t.backward_seconds;
    const auto start = Clock::now();
    for (int s = 0; s < steps; ++s) {
      executor.forward(feeds);
      executor.backward(output_grad);
    }
    const double total = seconds_since(start);
    double kernels = -kernels_before;
    for (const OperatorTime& t : executor.operator_times()) kernels += t.forward_seconds + t.backward_seconds;
    best = std::min(best, (total - kernels) / (2.0 * chain * steps));
  }
  return best;
}

// Seconds for one message of `floats` floats from rank 0 to rank 1, half of the best round trip.
double one_way_seconds(loom::runtime::Transport& transport, std::size_t floats, int repeats) {
  using namespace loom::runtime;
  std::vector<Outgoing<float>> send{{1 - transport.rank(), std::vector<float>(floats, 1.f)}};
  std::vector<float> buffer(floats);
  std::vector<Incoming<float>> receive{{1 - transport.rank(), &buffer}};
  std::vector<Outgoing<float>> none_out;
  std::vector<Incoming<float>> none_in;
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    if (transport.rank() == 0) {
      transport.exchange(send, none_in);
      transport.exchange(none_out, receive);
    } else {
      transport.exchange(none_out, receive);
      transport.exchange(send, none_in);
    }
    best = std::min(best, seconds_since(start) / 2);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  loom::runtime::MpiTransport transport(&argc, &argv);
  const bool linked = transport.size() >= 2;
  double latency = 0, bandwidth = 0;
  if (linked && transport.rank() < 2) {
    constexpr std::size_t big = std::size_t{4} << 20;  // 16 MiB of floats
    latency = one_way_seconds(transport, 1, 2000);
    bandwidth = static_cast<double>(big * sizeof(float)) / (one_way_seconds(transport, big, 20) - latency);
  }
  if (transport.rank() != 0) return 0;

  loom::search::Machine m;
  m.name = "cpu_host";
  m.nodes = 1;
  m.sockets_per_node = 1;
  m.devices_per_socket = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  m.device.kind = "cpu";
  m.device.peak_flops = gemm_flops();
  m.device.memory_bandwidth = memcpy_bandwidth();
  m.device.memory_bytes = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  m.device.kernel_overhead = kernel_overhead();
  m.device.dispatch_overhead = dispatch_overhead();
  // Without a second rank, a link is a copy in memory: each byte read once and written once.
  const loom::search::Link link = linked ? loom::search::Link{bandwidth, latency} : loom::search::Link{m.device.memory_bandwidth / 2, 0};
  m.intra_socket = m.inter_socket = m.inter_node = link;
  nlohmann::json doc = loom::search::machine_to_json(m);
  doc["description"] = "This host, one CPU core per rank: measured by loom_calibrate_host.";
  std::cout << doc.dump(2) << "\n";
  return 0;
}
