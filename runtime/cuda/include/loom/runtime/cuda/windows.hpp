#pragma once
// Swin-Transformer's window operators on device pointers, in float and double: the image cut into
// windows and put back (strided copies), the cyclic shift of its two spatial dimensions (four box
// copies) and the per-window attention mask.
#include <cstdint>

#include "loom/runtime/cuda/cuda_context.hpp"
#include "loom/runtime/cuda/layout.hpp"

namespace loom::runtime::cuda {

// An image [batch, height, width, channels] cut into windows of window x window tokens.
struct WindowShape {
  std::int64_t batch, height, width, channels, window;
};

// The image read as windows [batch * (height / window) * (width / window), window * window,
// channels], the windows in row-major order within each image; and the inverse copy.
StridedCopy image_to_windows(const WindowShape& shape);
StridedCopy windows_to_image(const WindowShape& shape);

// An image [batch, height, width, channels].
struct ImageShape {
  std::int64_t batch, height, width, channels;
};

// y[i, r, s, f] = x[i, (r + shift_h) % height, (s + shift_w) % width, f], 0 <= shift < extent.
template <class T>
void cyclic_shift(const CudaContext& ctx, const ImageShape& shape, std::int64_t shift_h, std::int64_t shift_w, const T* x, T* y);

// Scores x [rows, heads, size] (size = t u), rows row0 .. row0 + rows - 1 of the logical scores,
// plus a mask [windows, size] of every window: logical row i takes the mask of window i % windows.
struct WindowMaskShape {
  std::int64_t rows, heads, size, windows, row0 = 0;
};

// y = x + the row's mask (y may be x); dmask[w] = the sum of dy over the rows and heads of window w.
template <class T>
void add_window_mask_forward(const CudaContext& ctx, const WindowMaskShape& shape, const T* x, const T* mask, T* y);
template <class T>
void add_window_mask_backward(const CudaContext& ctx, const WindowMaskShape& shape, const T* dy, T* dmask);

}  // namespace loom::runtime::cuda
