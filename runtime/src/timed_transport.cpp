#include "loom/runtime/timed_transport.hpp"

#include <chrono>

namespace loom::runtime {

template <class Call>
void TimedTransport::timed(TransportCall what, Call&& call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (trace_) trace_->add_transport(what, start);
}

void TimedTransport::move_values(const std::vector<Message>& s, const std::vector<Message>& r) {
  timed(TransportCall::Exchange, [&] { inner_.move_values(s, r); });
}
void TimedTransport::sum_values(HostValues v, const std::vector<int>* g) {
  timed(TransportCall::Sum, [&] { inner_.sum_values(v, g); });
}
void TimedTransport::gather_values(HostValues m, HostValues a, const std::vector<int>& g) {
  timed(TransportCall::Gather, [&] { inner_.gather_values(m, a, g); });
}
void TimedTransport::scatter_sums(HostValues a, HostValues m, const std::vector<int>& g) {
  timed(TransportCall::ScatterSums, [&] { inner_.scatter_sums(a, m, g); });
}
void TimedTransport::swap_blocks(HostValues m, HostValues t, const std::vector<int>& g) {
  timed(TransportCall::SwapBlocks, [&] { inner_.swap_blocks(m, t, g); });
}
void TimedTransport::start_sum_values(HostValues v, const std::vector<int>& g) {
  timed(TransportCall::StartSum, [&] { inner_.start_sum_values(v, g); });
}
void TimedTransport::progress() {
  timed(TransportCall::Progress, [&] { inner_.progress(); });
}
void TimedTransport::finish_sums() {
  timed(TransportCall::FinishSums, [&] { inner_.finish_sums(); });
}
void TimedTransport::finish_sends() {
  timed(TransportCall::FinishSends, [&] { inner_.finish_sends(); });
}

}  // namespace loom::runtime
