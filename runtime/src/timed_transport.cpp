#include "loom/runtime/timed_transport.hpp"

#include <chrono>

namespace loom::runtime {

template <class Call>
void TimedTransport::timed(Call&& call) {
  const auto start = std::chrono::steady_clock::now();
  call();
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void TimedTransport::exchange(std::vector<Outgoing<float>>& s, std::vector<Incoming<float>>& r) { timed([&] { inner_.exchange(s, r); }); }
void TimedTransport::exchange(std::vector<Outgoing<double>>& s, std::vector<Incoming<double>>& r) { timed([&] { inner_.exchange(s, r); }); }
void TimedTransport::sum(std::vector<float>& v) { timed([&] { inner_.sum(v); }); }
void TimedTransport::sum(std::vector<double>& v) { timed([&] { inner_.sum(v); }); }
void TimedTransport::sum(std::vector<float>& v, const std::vector<int>& g) { timed([&] { inner_.sum(v, g); }); }
void TimedTransport::sum(std::vector<double>& v, const std::vector<int>& g) { timed([&] { inner_.sum(v, g); }); }
void TimedTransport::all_gather(std::vector<float>& v, const std::vector<int>& g) { timed([&] { inner_.all_gather(v, g); }); }
void TimedTransport::all_gather(std::vector<double>& v, const std::vector<int>& g) { timed([&] { inner_.all_gather(v, g); }); }
void TimedTransport::reduce_scatter(std::vector<float>& v, const std::vector<int>& g) { timed([&] { inner_.reduce_scatter(v, g); }); }
void TimedTransport::reduce_scatter(std::vector<double>& v, const std::vector<int>& g) { timed([&] { inner_.reduce_scatter(v, g); }); }
void TimedTransport::start_sum(std::vector<float>& v, const std::vector<int>& g) { timed([&] { inner_.start_sum(v, g); }); }
void TimedTransport::start_sum(std::vector<double>& v, const std::vector<int>& g) { timed([&] { inner_.start_sum(v, g); }); }
void TimedTransport::progress() { timed([&] { inner_.progress(); }); }
void TimedTransport::finish_sums() { timed([&] { inner_.finish_sums(); }); }

}  // namespace loom::runtime
