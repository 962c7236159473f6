#pragma once
// How the gradients of a weight's copies are summed among the devices holding them: the runtime
// sums them so, and the simulator's task graph charges them so.
#include <cstdint>

#include "loom/pcg/piece_moves.hpp"

namespace loom::pcg {

// Gradient boxes summed among the same devices and complete at the same node are packed into one
// buffer and summed together (a sum per box would pay its latency per box), except a whole weight's
// gradient of at least this many elements, summed where it lies in a sum of its own: copying it in
// and out of the buffer would cost more than the latency it saves.
inline constexpr std::int64_t kGradientSumInPlaceElements = 4096;

// Whether a box of a weight's gradient (`whole`: the weight's whole region) is summed in place.
inline bool gradient_summed_in_place(const Region& box, const Region& whole) {
  return box == whole && box.elements() >= kGradientSumInPlaceElements;
}

}  // namespace loom::pcg
