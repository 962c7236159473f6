#pragma once
#include <cstdint>

namespace loom::pcg {

// Folds `v` into the running hash `h`: the splitmix64 finalizer, order-sensitive and well spread.
inline std::uint64_t hash_mix(std::uint64_t h, std::uint64_t v) {
  std::uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace loom::pcg
