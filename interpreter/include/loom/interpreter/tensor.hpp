#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "loom/pcg/diagnostic.hpp"

namespace loom::spec {

// The most elements one tensor may hold. Larger sizes (a size written by mistake, a flag off by a few
// digits) are refused with an error before anything is allocated.
inline constexpr std::int64_t kMaxTensorElements = std::int64_t{1} << 32;

// A dense row-major tensor of values of one number domain.
template <class V>
struct Tensor {
  std::vector<std::int64_t> dims;
  std::vector<V> data;

  Tensor() = default;
  explicit Tensor(std::vector<std::int64_t> d, V fill = V{}) : dims(std::move(d)), data(element_count(dims), fill) {}

  // Throws LoomError, naming the dimensions, for a negative dimension or more than
  // kMaxTensorElements elements.
  static std::size_t element_count(const std::vector<std::int64_t>& d) {
    std::int64_t n = 1;
    bool too_many = false;
    for (std::int64_t x : d) {
      if (x < 0) throw LoomError("a tensor of dimensions " + dims_text(d) + " has a negative dimension");
      if (x != 0 && n > kMaxTensorElements / x)
        too_many = true;
      else
        n *= x;
    }
    if (too_many && std::find(d.begin(), d.end(), 0) == d.end())
      throw LoomError("a tensor of dimensions " + dims_text(d) + " would hold more than " + std::to_string(kMaxTensorElements) +
                      " elements, the most Loom allocates at once");
    return too_many ? 0 : static_cast<std::size_t>(n);
  }
  static std::string dims_text(const std::vector<std::int64_t>& d) {
    std::string out = "[";
    for (std::size_t i = 0; i < d.size(); ++i) out += (i ? ", " : "") + std::to_string(d[i]);
    return out + "]";
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
