#pragma once
#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

namespace loom::spec {

// A dense row-major tensor of values of one number domain.
template <class V>
struct Tensor {
  std::vector<std::int64_t> dims;
  std::vector<V> data;

  Tensor() = default;
  explicit Tensor(std::vector<std::int64_t> d, V fill = V{}) : dims(std::move(d)), data(element_count(dims), fill) {}

  static std::size_t element_count(const std::vector<std::int64_t>& d) {
    return static_cast<std::size_t>(std::accumulate(d.begin(), d.end(), std::int64_t{1}, std::multiplies<>()));
  }
  std::size_t size() const { return data.size(); }
  std::size_t rank() const { return dims.size(); }
  V& at(const std::vector<std::int64_t>& index) { return data[offset(index)]; }
  const V& at(const std::vector<std::int64_t>& index) const { return data[offset(index)]; }
  std::size_t offset(const std::vector<std::int64_t>& index) const {
    std::size_t off = 0;
    for (std::size_t i = 0; i < dims.size(); ++i) off = off * static_cast<std::size_t>(dims[i]) + static_cast<std::size_t>(index[i]);
    return off;
  }
};

}  // namespace loom::spec
