#pragma once
#include <compare>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace loom::pcg {

// A tensor's logical shape together with how it is spread over parallel tasks (RVD form):
// D[i] equal shards along dimension i, V partial tensors that sum to the value, R identical
// copies, and P[i] pipeline pieces of dimension i processed one after another.
struct ParallelShape {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> D;  // same rank as dims
  std::vector<std::int64_t> P;  // same rank as dims
  std::int64_t V = 1;
  std::int64_t R = 1;

  static ParallelShape unpartitioned(std::vector<std::int64_t> dims);
  // dims split D[i] ways along each dimension (no D: unsplit), V partial sums and R replicas.
  static ParallelShape partitioned(std::vector<std::int64_t> dims, std::vector<std::int64_t> D = {}, std::int64_t V = 1,
                                   std::int64_t R = 1);

  std::size_t rank() const { return dims.size(); }
  std::int64_t tasks() const;                    // prod(D) * V * R
  std::int64_t elements() const;                 // logical element count
  std::vector<std::int64_t> piece_dims() const;  // dims[i] / (D[i] * P[i])
  bool is_unpartitioned() const;

  // Throws LoomError naming the first problem: D or P of the wrong rank, a size or degree below
  // 1, a dimension that D[i] * P[i] does not divide, or counts too large for 64 bits.
  void validate() const;

  // e.g. "[8, 4/2]{V2,R2}"; "[8, 4]" when nothing is parallel.
  std::string to_string() const;

  bool operator==(const ParallelShape&) const = default;
  auto operator<=>(const ParallelShape&) const = default;
};

void to_json(nlohmann::json& j, const ParallelShape& s);
void from_json(const nlohmann::json& j, ParallelShape& s);

}  // namespace loom::pcg

template <>
struct std::hash<loom::pcg::ParallelShape> {
  std::size_t operator()(const loom::pcg::ParallelShape& shape) const noexcept;
};
