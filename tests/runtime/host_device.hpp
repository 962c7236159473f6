#pragma once
// A device whose memory lies in the host's, apart from the runtime's host values: its arrays are
// reached only through DeviceMemory and the kernels made for it, which run the CPU's kernels on
// what the arrays hold. It counts every copy between it and the host, so a test can see what a
// backend that keeps values in device memory moves, on a machine without one.
#include <memory>
#include <utility>
#include <vector>

#include "loom/runtime/kernel_registry.hpp"
#include "loom/runtime/optimizer.hpp"
#include "loom/runtime/value.hpp"

namespace loom::runtime::testing {

template <class T>
class HostDevice;

template <class T>
class HostDeviceArray final : public DeviceArray<T> {
 public:
  HostDeviceArray(const HostDevice<T>& device, std::vector<T> elements) : device_(device), elements(std::move(elements)) {}
  std::size_t size() const override { return elements.size(); }
  void copy_to_host(T* host) const override;
  const DeviceMemory<T>& memory() const override { return device_; }

  const HostDevice<T>& device_;
  std::vector<T> elements;
};

template <class T>
class HostDevice final : public DeviceMemory<T> {
 public:
  // Elements copied each way, and copies made.
  mutable std::size_t elements_to_host = 0, elements_from_host = 0, copies_to_host = 0, copies_from_host = 0;

  std::shared_ptr<DeviceArray<T>> copy_from_host(const T* host, std::size_t size) const override {
    elements_from_host += size;
    ++copies_from_host;
    return hold(std::vector<T>(host, host + size));
  }
  std::shared_ptr<DeviceArray<T>> zeros(std::size_t size) const override { return hold(std::vector<T>(size, T(0))); }
  std::shared_ptr<DeviceArray<T>> copy(const DeviceArray<T>& from) const override { return hold(elements(from)); }
  void add(DeviceArray<T>& into, const DeviceArray<T>& more) const override {
    std::vector<T>& sum = elements(into);
    const std::vector<T>& add = elements(more);
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += add[i];
  }
  void add_runs(const DeviceArray<T>& from, DeviceArray<T>& into, const std::vector<ElementRun>& runs) const override {
    const std::vector<T>& source = elements(from);
    std::vector<T>& target = elements(into);
    for (const ElementRun& r : runs)
      for (std::size_t k = 0; k < r.length; ++k) target.at(r.into + k) += source.at(r.from + k);
  }
  void sgd(DeviceArray<T>& w, const DeviceArray<T>& g, T learning_rate, ElementRange range) const override {
    sgd_update(elements(w).data(), elements(g).data(), learning_rate, range);
  }
  void adam(DeviceArray<T>& w, const DeviceArray<T>& g, DeviceArray<T>& m, DeviceArray<T>& v, const AdamStep<T>& step,
            ElementRange range) const override {
    adam_update(elements(w).data(), elements(g).data(), elements(m).data(), elements(v).data(), step, range);
  }
  void finish() const override {}

  std::shared_ptr<DeviceArray<T>> hold(std::vector<T> elements) const {
    return std::make_shared<HostDeviceArray<T>>(*this, std::move(elements));
  }
  static std::vector<T>& elements(DeviceArray<T>& a) { return dynamic_cast<HostDeviceArray<T>&>(a).elements; }
  static const std::vector<T>& elements(const DeviceArray<T>& a) { return dynamic_cast<const HostDeviceArray<T>&>(a).elements; }

  // A value's elements as a kernel on this device reads them (copied here first when only on the host).
  Tensor<T> read(const Value<T>& v) const {
    Tensor<T> t;
    t.dims = v.dims();
    t.data = elements(v.on(*this));
    return t;
  }
  // What a kernel on this device makes: held here. An empty tensor (a gradient not wanted) stays empty.
  Value<T> made(Tensor<T> t) const {
    if (t.data.empty()) return {};
    return Value<T>(t.dims, hold(std::move(t.data)));
  }
};

template <class T>
void HostDeviceArray<T>::copy_to_host(T* host) const {
  device_.elements_to_host += elements.size();
  ++device_.copies_to_host;
  std::copy(elements.begin(), elements.end(), host);
}

// `host`'s computation as a kernel of `device`: it reads its values there and leaves what it makes there.
template <class T>
Kernel<T> on_host_device(const Kernel<T>& host, const HostDevice<T>& device) {
  Kernel<T> k;
  k.route = host.route;
  k.forward_values = [host, &device](const ValueCall<T>& c) {
    std::vector<Tensor<T>> inputs;
    for (const Value<T>* v : c.inputs) inputs.push_back(device.read(*v));
    const OpCall<T> call{c.op, c.attrs, pointers(inputs), c.regions, c.logical_dims, c.output_regions, c.output_dims};
    std::vector<Value<T>> out;
    for (Tensor<T>& t : host.forward(call)) out.push_back(device.made(std::move(t)));
    return out;
  };
  k.backward_values = [host, &device](const ValueGradCall<T>& g) {
    std::vector<Tensor<T>> inputs, outputs, grads;
    for (const Value<T>* v : g.call.inputs) inputs.push_back(device.read(*v));
    for (const Value<T>* v : g.outputs) outputs.push_back(device.read(*v));
    for (const Value<T>* v : g.output_grads) grads.push_back(device.read(*v));
    const OpCall<T> call{g.call.op,           g.call.attrs,          pointers(inputs),  g.call.regions,
                         g.call.logical_dims, g.call.output_regions, g.call.output_dims};
    const GradCall<T> host_grad{call, pointers(outputs), pointers(grads), g.wanted};
    std::vector<Value<T>> out;
    for (Tensor<T>& t : host.backward(host_grad)) out.push_back(device.made(std::move(t)));
    return out;
  };
  return k;
}

// Every native CPU kernel, also as a Backend::Cuda kernel of `device` (float and double): trained
// with Backend::Cuda, a plan runs on the host device wherever the CPU has a native kernel.
template <class T>
KernelRegistry host_device_registry(const HostDevice<T>& device) {
  KernelRegistry r = builtin_kernels();
  for (const std::string& op : builtin_kernels().ops(Backend::Cpu))
    if (const Kernel<T>* k = builtin_kernels().find<T>(op, Backend::Cpu)) r.add<T>(op, Backend::Cuda, on_host_device(*k, device));
  return r;
}

}  // namespace loom::runtime::testing
