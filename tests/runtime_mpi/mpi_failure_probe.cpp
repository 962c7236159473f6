// Started under mpiexec by the failure tests: rank 1 fails the way the mode says just before a
// step, while the other ranks take that step and wait on it.
//   loom_mpi_failure_probe MODE
// MODE: ok (nobody fails), hang (rank 1 sleeps forever before an exchange), die (rank 1 exits
// with status 3 before an exchange), killed (rank 1 is killed by SIGKILL before an exchange),
// hang-sum (rank 1 sleeps before a sum over all ranks), hang-group-sum (rank 1 sleeps before
// the first sum over the group of ranks 0 and 1, run with 3 ranks: the third leaves once the
// others' deadline is past), hang-started-sum (rank 1 sleeps before starting two sums the
// others start and then wait for).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "loom/runtime/mpi_transport.hpp"

namespace {

using loom::runtime::Incoming;
using loom::runtime::MpiTransport;
using loom::runtime::Outgoing;

[[noreturn]] void sleep_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

// Each rank sends its number to the next rank of a ring and returns what the previous one sent.
float ring_exchange(MpiTransport& transport) {
  const int next = (transport.rank() + 1) % transport.size();
  const int previous = (transport.rank() + transport.size() - 1) % transport.size();
  std::vector<float> received(1);
  std::vector<Outgoing<float>> sends{{next, {static_cast<float>(transport.rank())}}};
  std::vector<Incoming<float>> receives{{previous, &received}};
  transport.exchange(sends, receives);
  return received[0];
}

}  // namespace

int main(int argc, char** argv) {
  MpiTransport transport(&argc, &argv);
  const std::string mode = argc == 2 ? argv[1] : "";
  const bool failing = transport.rank() == 1;
  if (mode == "ok" || mode == "hang" || mode == "die" || mode == "killed") {
    if (failing && mode == "hang") sleep_forever();
    if (failing && mode == "die") std::_Exit(3);
    if (failing && mode == "killed") std::raise(SIGKILL);
    const int previous = (transport.rank() + transport.size() - 1) % transport.size();
    if (ring_exchange(transport) != static_cast<float>(previous)) return 1;
  } else if (mode == "hang-sum") {
    if (failing) sleep_forever();
    std::vector<double> values{1.0};
    transport.sum(values);
    if (values[0] != transport.size()) return 1;
  } else if (mode == "hang-group-sum") {
    if (transport.rank() > 1) {
      // Its own wait for the others at the end must not end the job before rank 0 reports.
      std::this_thread::sleep_for(std::chrono::seconds(2));
      return 0;
    }
    if (failing) sleep_forever();
    std::vector<double> values{1.0};
    transport.sum(values, {0, 1});
    if (values[0] != 2.0) return 1;
  } else if (mode == "hang-started-sum") {
    if (failing) sleep_forever();
    std::vector<double> first{1.0}, second{1.0, 1.0};
    transport.start_sum(first, {0, 1});
    transport.start_sum(second, {0, 1});
    transport.progress();
    transport.finish_sums();
  } else {
    std::fprintf(stderr, "usage: loom_mpi_failure_probe ok|hang|die|killed|hang-sum|hang-group-sum|hang-started-sum\n");
    return 64;
  }
  std::printf("rank %d: done\n", transport.rank());
  return 0;
}
