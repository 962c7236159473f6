#include "loom/superopt/fingerprint.hpp"

#include "loom/superopt/hash.hpp"

namespace loom::superopt {

std::uint64_t fingerprint(const Value<spec::ModularValue>& value) {
  const pcg::ParallelShape& s = *value.shape;
  std::uint64_t h = hash_combine(0xF1A9E2ULL, s.rank());
  for (std::size_t i = 0; i < s.rank(); ++i) {
    h = hash_combine(h, static_cast<std::uint64_t>(s.dims[i]));
    h = hash_combine(h, static_cast<std::uint64_t>(s.D[i]));
    h = hash_combine(h, static_cast<std::uint64_t>(s.P[i]));
  }
  h = hash_combine(h, static_cast<std::uint64_t>(s.V));
  h = hash_combine(h, static_cast<std::uint64_t>(s.R));
  for (const auto& v : value.tensor->data) h = hash_combine(h, v.v);
  return h;
}

std::uint64_t pair_fingerprint(std::uint64_t first, std::uint64_t second) { return hash_combine(hash_combine(0x2A1B0ULL, first), second); }

std::uint64_t truncate_fingerprint(std::uint64_t fingerprint, int bits) {
  if (bits >= 64) return fingerprint;
  if (bits <= 0) return 0;
  return fingerprint & ((std::uint64_t{1} << bits) - 1);
}

}  // namespace loom::superopt
