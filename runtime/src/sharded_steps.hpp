#pragma once
// What the sharded executor's parts share: a piece's dimensions and a step of point-to-point
// messages (gradients are added into pieces by add_into, value.hpp).
#include <functional>
#include <vector>

#include "loom/pcg/parallel_shape.hpp"
#include "loom/runtime/tensor.hpp"
#include "loom/runtime/transport.hpp"

namespace loom::runtime {

inline std::vector<std::int64_t> piece_dims(const pcg::ParallelShape& s) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < s.rank(); ++i) out.push_back(s.dims[i] / s.D[i]);
  return out;
}

// A step's messages, with where each received buffer goes once it has arrived.
template <class T>
struct Step {
  std::vector<Outgoing<T>> sends;
  std::vector<int> sources;
  std::vector<std::vector<T>> buffers;
  std::vector<std::function<void(std::vector<T>&)>> on_arrival;  // may take the buffer

  void receive(int from, std::size_t length, std::function<void(std::vector<T>&)> then) {
    sources.push_back(from);
    buffers.emplace_back(length);
    on_arrival.push_back(std::move(then));
  }
  void run(Transport& transport) {
    std::vector<Incoming<T>> receives;
    for (std::size_t i = 0; i < buffers.size(); ++i) receives.push_back({sources[i], &buffers[i]});
    if (!sends.empty() || !receives.empty()) transport.exchange(sends, receives);
    for (std::size_t i = 0; i < buffers.size(); ++i) on_arrival[i](buffers[i]);
  }
};

}  // namespace loom::runtime
