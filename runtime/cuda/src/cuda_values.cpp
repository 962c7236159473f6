#include "loom/runtime/cuda/cuda_values.hpp"

#include <map>
#include <memory>
#include <mutex>

#include "kernel_adapter.hpp"
#include "loom/runtime/cuda/element_runs.hpp"
#include "loom/runtime/cuda/elementwise.hpp"
#include "loom/runtime/cuda/optimizer_steps.hpp"

namespace loom::runtime::cuda {
namespace {

template <class T>
class CudaMemory final : public DeviceMemory<T> {
 public:
  static constexpr std::size_t kFewRuns = 8;

  std::shared_ptr<DeviceArray<T>> copy_from_host(const T* host, std::size_t size) const override {
    DeviceBuffer<T> buffer(cuda_adapter::context(), size);
    buffer.upload(host, size);
    return hold(std::move(buffer));
  }
  std::shared_ptr<DeviceArray<T>> zeros(std::size_t size) const override {
    const CudaContext& ctx = cuda_adapter::context();
    DeviceBuffer<T> buffer(ctx, size);
    if (size > 0) check_cuda(cudaMemsetAsync(buffer.data(), 0, size * sizeof(T), ctx.stream()), "cudaMemsetAsync");
    return hold(std::move(buffer));
  }
  std::shared_ptr<DeviceArray<T>> copy(const DeviceArray<T>& from) const override { return hold(copy_of(buffer_of(from))); }
  void add(DeviceArray<T>& into, const DeviceArray<T>& more) const override {
    DeviceBuffer<T>& sum = buffer_of(into);
    binary_forward<T>(cuda_adapter::context(), Arith::Add, static_cast<std::int64_t>(sum.size()), sum.data(), buffer_of(more).data(),
                      sum.data());
  }
  void add_runs(const DeviceArray<T>& from, DeviceArray<T>& into, const std::vector<ElementRun>& runs) const override {
    if (runs.empty()) return;
    // A few long runs (whole rows, whole pieces): each over the whole grid.
    if (runs.size() <= kFewRuns) {
      for (const ElementRun& r : runs)
        binary_forward<T>(cuda_adapter::context(), Arith::Add, static_cast<std::int64_t>(r.length), buffer_of(into).data() + r.into,
                          buffer_of(from).data() + r.from, buffer_of(into).data() + r.into);
      return;
    }
    std::vector<std::int64_t> packed;
    packed.reserve(3 * runs.size());
    for (const ElementRun& r : runs)
      for (std::size_t v : {r.from, r.into, r.length}) packed.push_back(static_cast<std::int64_t>(v));
    const DeviceBuffer<std::int64_t> listed(cuda_adapter::context(), packed);
    cuda::add_runs<T>(cuda_adapter::context(), listed.data(), static_cast<std::int64_t>(runs.size()), buffer_of(from).data(),
                      buffer_of(into).data());
  }
  void sgd(DeviceArray<T>& w, const DeviceArray<T>& g, T learning_rate, ElementRange range) const override {
    sgd_step<T>(cuda_adapter::context(), length(range), learning_rate, buffer_of(g).data() + range.begin,
                buffer_of(w).data() + range.begin);
  }
  void adam(DeviceArray<T>& w, const DeviceArray<T>& g, DeviceArray<T>& m, DeviceArray<T>& v, const AdamStep<T>& s,
            ElementRange range) const override {
    adam_step<T>(cuda_adapter::context(), length(range), s.learning_rate, s.beta1, s.beta2, s.epsilon, s.correction1, s.correction2,
                 buffer_of(g).data() + range.begin, buffer_of(m).data() + range.begin, buffer_of(v).data() + range.begin,
                 buffer_of(w).data() + range.begin);
  }
  void finish() const override { cuda_adapter::context().synchronize(); }

  std::shared_ptr<DeviceArray<T>> hold(DeviceBuffer<T> buffer) const { return std::make_shared<CudaArray<T>>(*this, std::move(buffer)); }
  static DeviceBuffer<T>& buffer_of(DeviceArray<T>& a) { return dynamic_cast<CudaArray<T>&>(a).buffer(); }
  static const DeviceBuffer<T>& buffer_of(const DeviceArray<T>& a) { return dynamic_cast<const CudaArray<T>&>(a).buffer(); }
  static std::int64_t length(ElementRange r) { return static_cast<std::int64_t>(r.end - r.begin); }
};

}  // namespace

template <class T>
const DeviceMemory<T>& device_memory() {
  static std::mutex guard;
  static std::map<int, std::unique_ptr<CudaMemory<T>>> memories;
  const int device = cuda_adapter::context().device();
  const std::lock_guard<std::mutex> lock(guard);
  auto& slot = memories[device];
  if (!slot) slot = std::make_unique<CudaMemory<T>>();
  return *slot;
}

template <class T>
const DeviceBuffer<T>& device_buffer(const Value<T>& v) {
  return dynamic_cast<const CudaArray<T>&>(v.on(device_memory<T>())).buffer();
}

template <class T>
DeviceBuffer<T> copy_of(const DeviceBuffer<T>& source) {
  const CudaContext& ctx = cuda_adapter::context();
  DeviceBuffer<T> buffer(ctx, source.size());
  if (source.size() > 0)
    check_cuda(cudaMemcpyAsync(buffer.data(), source.data(), source.size() * sizeof(T), cudaMemcpyDeviceToDevice, ctx.stream()),
               "cudaMemcpyAsync");
  return buffer;
}

template <class T>
Value<T> device_value(DeviceBuffer<T> buffer, std::vector<std::int64_t> dims) {
  return Value<T>(std::move(dims), std::make_shared<CudaArray<T>>(device_memory<T>(), std::move(buffer)));
}

#define LOOM_INSTANTIATE(T)                                          \
  template const DeviceMemory<T>& device_memory<T>();                \
  template const DeviceBuffer<T>& device_buffer<T>(const Value<T>&); \
  template DeviceBuffer<T> copy_of<T>(const DeviceBuffer<T>&);       \
  template Value<T> device_value<T>(DeviceBuffer<T>, std::vector<std::int64_t>);
LOOM_INSTANTIATE(float)
LOOM_INSTANTIATE(double)
#undef LOOM_INSTANTIATE

}  // namespace loom::runtime::cuda
