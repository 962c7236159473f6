// Swin-Transformer's windows: partitioning an image [b, h, w, c] into ws x ws windows
// [b * windows, ws * ws, c] and back, the cyclic shift of its spatial dimensions, and the
// per-window attention mask. Each moves rows of ws * c (or w * c) elements. The windows and the
// roll are laid out over whole spatial dimensions, so those refuse split pieces; the mask picks
// its window from the logical score row, so scores may be split anywhere.
#include "eigen_views.hpp"
#include "kernels.hpp"
#include "loom/runtime/piece_checks.hpp"

namespace loom::runtime::kernels {
namespace {

template <class T>
using Tensors = std::vector<Tensor<T>>;

// An image batch [images, height, width, channels] cut into ws x ws windows.
struct WindowGrid {
  std::int64_t images, height, width, channels, ws;

  std::int64_t windows_per_image() const { return (height / ws) * (width / ws); }
  std::vector<std::int64_t> image_dims() const { return {images, height, width, channels}; }
  std::vector<std::int64_t> window_dims() const { return {images * windows_per_image(), ws * ws, channels}; }

  // Calls `visit(offset in the image, offset in the windows, length)` for every row of every window.
  template <class Visit>
  void for_each_window_row(Visit&& visit) const {
    const std::int64_t row = ws * channels;
    std::int64_t at = 0;
    for (std::int64_t b = 0; b < images; ++b)
      for (std::int64_t wy = 0; wy < height / ws; ++wy)
        for (std::int64_t wx = 0; wx < width / ws; ++wx)
          for (std::int64_t ty = 0; ty < ws; ++ty, at += row) visit(((b * height + wy * ws + ty) * width + wx * ws) * channels, at, row);
  }
};

template <class T>
Tensor<T> to_windows(const Tensor<T>& image, const WindowGrid& grid) {
  Tensor<T> out(grid.window_dims());
  grid.for_each_window_row([&](std::int64_t from, std::int64_t to, std::int64_t n) { matrix(out, 1, n, to) = matrix(image, 1, n, from); });
  return out;
}

template <class T>
Tensor<T> to_image(const Tensor<T>& windows, const WindowGrid& grid) {
  Tensor<T> out(grid.image_dims());
  grid.for_each_window_row(
      [&](std::int64_t to, std::int64_t from, std::int64_t n) { matrix(out, 1, n, to) = matrix(windows, 1, n, from); });
  return out;
}

// x [b, h, w, c]; the batch and channels may be pieces, the spatial dimensions are whole.
template <class T>
WindowGrid image_grid(const OpCall<T>& c) {
  require_whole(c, 0, 1, "windows are cut from the whole image height");
  require_whole(c, 0, 2, "windows are cut from the whole image width");
  const auto& d = c.input(0).dims;
  return WindowGrid{d[0], d[1], d[2], d[3], c.attr("ws")};
}

// x [m, ws * ws, c]: whole windows of whole images (m a multiple of the windows per image).
template <class T>
WindowGrid windows_grid(const OpCall<T>& c) {
  require_whole(c, 0, 1, "a window's tokens are its whole ws x ws block");
  const auto& d = c.input(0).dims;
  const WindowGrid grid{0, c.attr("height"), c.attr("width"), d[2], c.attr("ws")};
  const std::int64_t per_image = grid.windows_per_image();
  if (d[0] % per_image != 0 || c.offset(0, 0) % per_image != 0)
    throw LoomError(c.op + ": the piece holds windows " + std::to_string(c.offset(0, 0)) + " .. " +
                    std::to_string(c.offset(0, 0) + d[0] - 1) + ", not whole images of " + std::to_string(per_image) +
                    " windows; a plan must not split dimension 0 there");
  return WindowGrid{d[0] / per_image, grid.height, grid.width, grid.channels, grid.ws};
}

template <class T>
Kernel<T> window_partition_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) { return Tensors<T>{to_windows(c.input(0), image_grid(c))}; };
  k.backward = [](const GradCall<T>& g) { return Tensors<T>{to_image(g.grad(0), image_grid(g.call))}; };
  return k;
}

template <class T>
Kernel<T> window_reverse_kernel() {
  Kernel<T> k;
  k.forward = [](const OpCall<T>& c) { return Tensors<T>{to_image(c.input(0), windows_grid(c))}; };
  k.backward = [](const GradCall<T>& g) { return Tensors<T>{to_windows(g.grad(0), windows_grid(g.call))}; };
  return k;
}

// out[i, r, s] = x[i, (r + sh) % h, (s + sw) % w] for x [b, h, w, c]: each output row is a source
// row rotated left by sw pixels.
template <class T>
Tensor<T> roll(const Tensor<T>& x, std::int64_t sh, std::int64_t sw) {
  const std::int64_t b = x.dims[0], h = x.dims[1], w = x.dims[2], c = x.dims[3];
  Tensor<T> out(x.dims);
  for (std::int64_t i = 0; i < b; ++i)
    for (std::int64_t r = 0; r < h; ++r) {
      const std::int64_t to = (i * h + r) * w * c, from = (i * h + (r + sh) % h) * w * c;
      matrix(out, 1, (w - sw) * c, to) = matrix(x, 1, (w - sw) * c, from + sw * c);
      matrix(out, 1, sw * c, to + (w - sw) * c) = matrix(x, 1, sw * c, from);
    }
  return out;
}

template <class T>
Kernel<T> cyclic_shift_kernel() {
  auto whole_image = [](const OpCall<T>& c) {
    require_whole(c, 0, 1, "the shift wraps around the whole height");
    require_whole(c, 0, 2, "the shift wraps around the whole width");
  };
  Kernel<T> k;
  k.forward = [whole_image](const OpCall<T>& c) {
    whole_image(c);
    return Tensors<T>{roll(c.input(0), c.attr("sh"), c.attr("sw"))};
  };
  k.backward = [whole_image](const GradCall<T>& g) {
    whole_image(g.call);
    const std::int64_t h = g.input(0).dims[1], w = g.input(0).dims[2];
    return Tensors<T>{roll(g.grad(0), (h - g.call.attr("sh")) % h, (w - g.call.attr("sw")) % w)};
  };
  return k;
}

// x [m, h, t, u] plus mask [w, t, u]: score row i (logical) of every head gets mask[i % w].
template <class T>
Kernel<T> add_window_mask_kernel() {
  // Calls `visit(offset of a t x u block of x, offset of its mask block, block size)` for every block.
  auto for_each_block = [](const OpCall<T>& c, auto&& visit) {
    require_whole(c, 1, 0, "a score row picks its window's mask among all windows");
    const auto& x = c.input(0);
    const std::int64_t rows = x.dims[0], heads = x.dims[1], size = x.dims[2] * x.dims[3];
    const std::int64_t windows = c.input(1).dims[0], row0 = c.offset(0, 0);
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t a = 0; a < heads; ++a) visit((i * heads + a) * size, ((row0 + i) % windows) * size, size);
  };
  Kernel<T> k;
  k.forward = [for_each_block](const OpCall<T>& c) {
    Tensor<T> out = c.input(0);
    for_each_block(
        c, [&](std::int64_t at, std::int64_t mask_at, std::int64_t n) { matrix(out, 1, n, at) += matrix(c.input(1), 1, n, mask_at); });
    return Tensors<T>{std::move(out)};
  };
  k.backward = [for_each_block](const GradCall<T>& g) {
    Tensors<T> grads{g.grad(0), zeros_like(g.input(1))};
    for_each_block(g.call, [&](std::int64_t at, std::int64_t mask_at, std::int64_t n) {
      matrix(grads[1], 1, n, mask_at) += matrix(g.grad(0), 1, n, at);
    });
    return grads;
  };
  return k;
}

template <class T>
void add_all(BackendKernels& k) {
  k.provide<T>(NativeKernel::WindowPartition, window_partition_kernel<T>());
  k.provide<T>(NativeKernel::WindowReverse, window_reverse_kernel<T>());
  k.provide<T>(NativeKernel::CyclicShift, cyclic_shift_kernel<T>());
  k.provide<T>(NativeKernel::AddWindowMask, add_window_mask_kernel<T>());
}

}  // namespace

void add_window_kernels(BackendKernels& k) {
  add_all<float>(k);
  add_all<double>(k);
}

}  // namespace loom::runtime::kernels
