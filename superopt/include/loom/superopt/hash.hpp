#pragma once
// 64- and 128-bit hashing for fingerprints and structural graph keys.
#include <compare>
#include <cstdint>

namespace loom::superopt {

// A bijective 64-bit mixer (the finalizer of SplitMix64).
constexpr std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

constexpr std::uint64_t hash_combine(std::uint64_t seed, std::uint64_t value) { return mix64(seed ^ mix64(value + 0x632be59bd9b4e019ULL)); }

// Two independent 64-bit hashes: structural keys whose accidental equality is negligible.
struct Key128 {
  std::uint64_t lo = 0x243f6a8885a308d3ULL;
  std::uint64_t hi = 0x13198a2e03707344ULL;

  Key128& add(std::uint64_t value) {
    lo = hash_combine(lo, value);
    hi = hash_combine(hi ^ 0xa4093822299f31d0ULL, value);
    return *this;
  }
  Key128& add(const Key128& other) { return add(other.lo).add(other.hi); }

  auto operator<=>(const Key128&) const = default;
};

struct Key128Hash {
  std::size_t operator()(const Key128& k) const { return static_cast<std::size_t>(k.lo); }
};

}  // namespace loom::superopt
