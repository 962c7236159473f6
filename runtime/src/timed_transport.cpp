#include "loom/runtime/timed_transport.hpp"

#include <chrono>

namespace loom::runtime {

template <class Call>
void TimedTransport::timed(Call&& call, bool traced) {
  const auto start = std::chrono::steady_clock::now();
  call();
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (trace_ && traced) trace_->add_transport(start);
}

void TimedTransport::move_values(const std::vector<Message>& s, const std::vector<Message>& r) {
  timed([&] { inner_.move_values(s, r); });
}
void TimedTransport::sum_values(HostValues v, const std::vector<int>* g) {
  timed([&] { inner_.sum_values(v, g); });
}
void TimedTransport::gather_values(HostValues m, HostValues a, const std::vector<int>& g) {
  timed([&] { inner_.gather_values(m, a, g); });
}
void TimedTransport::scatter_sums(HostValues a, HostValues m, const std::vector<int>& g) {
  timed([&] { inner_.scatter_sums(a, m, g); });
}
void TimedTransport::swap_blocks(HostValues m, HostValues t, const std::vector<int>& g) {
  timed([&] { inner_.swap_blocks(m, t, g); });
}
void TimedTransport::start_sum_values(HostValues v, const std::vector<int>& g) {
  timed([&] { inner_.start_sum_values(v, g); });
}
void TimedTransport::progress() {
  // A look at the sums in flight, between tasks: in a trace, only a sum's start and the wait for it.
  timed([&] { inner_.progress(); }, false);
}
void TimedTransport::finish_sums() {
  timed([&] { inner_.finish_sums(); });
}
void TimedTransport::finish_sends() {
  timed([&] { inner_.finish_sends(); });
}

}  // namespace loom::runtime
