#pragma once
// The 64-bit FNV-1a hash: stable across machines, runs and builds, so it can name cache entries
// and seed generators.
#include <cstdint>
#include <string_view>

namespace loom::pcg {

inline std::uint64_t fnv1a(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace loom::pcg
