#include "loom/runtime/cuda/windows.hpp"

#include <string>

#include "grid_stride.cuh"
#include "launch.cuh"
#include "library_status.hpp"

namespace loom::runtime::cuda {
namespace {

// The image as [batch, height / window, window, width / window, window, channels], visited in the
// windows' order [batch, height / window, width / window, window, window, channels].
StridedCopy window_box(const WindowShape& s, bool to_windows) {
  const std::int64_t rows = s.height / s.window, cols = s.width / s.window, c = s.channels, w = s.window;
  const std::initializer_list<std::int64_t> image{s.height * s.width * c, w * s.width * c, w * c, s.width * c, c, 1},
      windows{rows * cols * w * w * c, cols * w * w * c, w * w * c, w * c, c, 1};
  return strided_box({s.batch, rows, cols, w, w, c}, to_windows ? image : windows, to_windows ? windows : image);
}

template <class T>
__global__ void add_window_mask_kernel(WindowMaskShape s, const T* x, const T* mask, T* y) {
  LOOM_GRID_STRIDE_LOOP(at, s.rows * s.heads * s.size) {
    const std::int64_t row = at / (s.heads * s.size), p = at % s.size;
    y[at] = x[at] + mask[((s.row0 + row) % s.windows) * s.size + p];
  }
}

// One thread per mask element, adding the rows of its window in order (deterministic); consecutive
// threads read consecutive positions of a row.
template <class T>
__global__ void window_mask_grad_kernel(WindowMaskShape s, const T* dy, T* dmask) {
  LOOM_GRID_STRIDE_LOOP(at, s.windows * s.size) {
    const std::int64_t window = at / s.size, p = at % s.size;
    // The first local row whose logical row falls in this window.
    const std::int64_t first = ((window - s.row0) % s.windows + s.windows) % s.windows;
    T total = 0;
    for (std::int64_t row = first; row < s.rows; row += s.windows)
      for (std::int64_t head = 0; head < s.heads; ++head) total += dy[(row * s.heads + head) * s.size + p];
    dmask[at] = total;
  }
}

}  // namespace

StridedCopy image_to_windows(const WindowShape& shape) { return window_box(shape, true); }
StridedCopy windows_to_image(const WindowShape& shape) { return window_box(shape, false); }

template <class T>
void cyclic_shift(const CudaContext& ctx, const ImageShape& s, std::int64_t shift_h, std::int64_t shift_w, const T* x, T* y) {
  if (shift_h < 0 || shift_h >= s.height || shift_w < 0 || shift_w >= s.width)
    throw CudaError("cyclic_shift: shifts (" + std::to_string(shift_h) + ", " + std::to_string(shift_w) + ") outside the image " +
                    std::to_string(s.height) + " x " + std::to_string(s.width));
  const std::int64_t c = s.channels;
  // Output rows [0, height - shift_h) read rows [shift_h, height), the rest rows [0, shift_h); the
  // same for columns: four boxes.
  const std::int64_t row_parts[2][2] = {{0, shift_h}, {s.height - shift_h, 0}};  // {output row, input row}
  const std::int64_t col_parts[2][2] = {{0, shift_w}, {s.width - shift_w, 0}};
  const std::int64_t row_sizes[2] = {s.height - shift_h, shift_h}, col_sizes[2] = {s.width - shift_w, shift_w};
  for (int rp = 0; rp < 2; ++rp)
    for (int cp = 0; cp < 2; ++cp) {
      StridedCopy box;
      box.rank = 4;
      const std::int64_t extents[] = {s.batch, row_sizes[rp], col_sizes[cp], c};
      const std::int64_t strides[] = {s.height * s.width * c, s.width * c, c, 1};
      for (std::size_t d = 0; d < box.rank; ++d) {
        box.extents[d] = extents[d];
        box.src_strides[d] = box.dst_strides[d] = strides[d];
      }
      const std::int64_t from = (row_parts[rp][1] * s.width + col_parts[cp][1]) * c;
      const std::int64_t to = (row_parts[rp][0] * s.width + col_parts[cp][0]) * c;
      strided_copy(ctx, box, x + from, y + to);
    }
}

template <class T>
void add_window_mask_forward(const CudaContext& ctx, const WindowMaskShape& shape, const T* x, const T* mask, T* y) {
  const std::int64_t n = shape.rows * shape.heads * shape.size;
  if (n == 0) return;
  add_window_mask_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(shape, x, mask, y);
  check_launch("add_window_mask_kernel");
}

template <class T>
void add_window_mask_backward(const CudaContext& ctx, const WindowMaskShape& shape, const T* dy, T* dmask) {
  const std::int64_t n = shape.windows * shape.size;
  if (n == 0) return;
  window_mask_grad_kernel<<<grid_for(n), kBlock, 0, ctx.stream()>>>(shape, dy, dmask);
  check_launch("window_mask_grad_kernel");
}

#define LOOM_INSTANTIATE(T)                                                                                       \
  template void cyclic_shift<T>(const CudaContext&, const ImageShape&, std::int64_t, std::int64_t, const T*, T*); \
  template void add_window_mask_forward<T>(const CudaContext&, const WindowMaskShape&, const T*, const T*, T*);   \
  template void add_window_mask_backward<T>(const CudaContext&, const WindowMaskShape&, const T*, T*);
LOOM_INSTANTIATE(float)
LOOM_INSTANTIATE(double)
#undef LOOM_INSTANTIATE

}  // namespace loom::runtime::cuda
