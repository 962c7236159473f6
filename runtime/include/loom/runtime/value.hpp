#pragma once
// A value the runtime holds (a piece, a gradient, a weight, an optimizer moment): its dims, and
// its elements in host memory, in a backend's device memory, or in both. A backend whose kernels
// compute in device memory leaves what they make there; whatever a host step needs (a message, a
// box cut out, the loss, a checkpoint) is copied back when that step asks for it, and copied to
// the device again only when a kernel there reads it and the device copy was dropped.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/tensor.hpp"

namespace loom::runtime {

// Elements [begin, end) of a value's row-major data.
struct ElementRange {
  std::size_t begin = 0, end = 0;
  bool operator==(const ElementRange&) const = default;
};
using ElementRanges = std::map<std::string, std::vector<ElementRange>>;

// A run of elements a box takes from one array into another: `length` elements from offset `from`
// added into those from offset `into`.
struct ElementRun {
  std::size_t from = 0, into = 0, length = 0;
  bool operator==(const ElementRun&) const = default;
};

// One Adam update's constants: the step size, the moments' decay rates and the bias corrections
// of this step (1 - beta^step).
template <class T>
struct AdamStep {
  T learning_rate, beta1, beta2, epsilon, correction1, correction2;
};

template <class T>
class DeviceMemory;

// Elements a backend holds in its own memory.
template <class T>
class DeviceArray {
 public:
  virtual ~DeviceArray() = default;
  virtual std::size_t size() const = 0;
  // Copies every element into `host` (size() of them), waiting for the work queued before.
  virtual void copy_to_host(T* host) const = 0;
  virtual const DeviceMemory<T>& memory() const = 0;
};

// A backend's memory: makes arrays, and runs the few whole-array steps that the executor (adding
// up gradients) and the optimizer take on values where they lie.
template <class T>
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual std::shared_ptr<DeviceArray<T>> copy_from_host(const T* host, std::size_t size) const = 0;
  virtual std::shared_ptr<DeviceArray<T>> zeros(std::size_t size) const = 0;
  virtual std::shared_ptr<DeviceArray<T>> copy(const DeviceArray<T>& from) const = 0;
  // into += more, element by element (arrays of one size).
  virtual void add(DeviceArray<T>& into, const DeviceArray<T>& more) const = 0;
  // Adds each run of `from` into `into` (a box of one piece into another; the runs do not overlap
  // in `into`).
  virtual void add_runs(const DeviceArray<T>& from, DeviceArray<T>& into, const std::vector<ElementRun>& runs) const = 0;
  // w -= learning_rate * g over `range`.
  virtual void sgd(DeviceArray<T>& w, const DeviceArray<T>& g, T learning_rate, ElementRange range) const = 0;
  // Adam over `range`: the moments m and v, then w.
  virtual void adam(DeviceArray<T>& w, const DeviceArray<T>& g, DeviceArray<T>& m, DeviceArray<T>& v, const AdamStep<T>& step,
                    ElementRange range) const = 0;
  // Waits for the work queued on the device (its kernels may run after they are called).
  virtual void finish() const = 0;
};

template <class T>
class Value {
 public:
  Value() = default;
  // Held in host memory.
  Value(Tensor<T> host) : host_(std::move(host)), on_host_(true) {}  // NOLINT(google-explicit-constructor)
  // Held in a backend's memory: `device` holds the elements of a value of `dims`.
  Value(std::vector<std::int64_t> dims, std::shared_ptr<DeviceArray<T>> device) : device_(std::move(device)) {
    host_.dims = std::move(dims);
  }
  // A copy shares the original's device array until either changes it (on_mut copies it first).
  Value(const Value&) = default;
  Value& operator=(const Value&) = default;
  Value(Value&&) noexcept = default;
  Value& operator=(Value&&) noexcept = default;

  const std::vector<std::int64_t>& dims() const { return host_.dims; }
  std::size_t rank() const { return host_.dims.size(); }
  // Elements of a value of its dims; zero for a value that holds none.
  std::size_t size() const { return empty() ? 0 : Tensor<T>::element_count(host_.dims); }
  // Whether it holds no elements anywhere (never given, or freed).
  bool empty() const { return !device_ && host_.data.empty(); }

  // Its elements in host memory, copied from the device when only there.
  const Tensor<T>& host() const {
    if (!on_host_ && device_) {
      host_.data.resize(device_->size());
      device_->copy_to_host(host_.data.data());
      on_host_ = true;
    }
    return host_;
  }
  // The same, to change: the device copy is dropped.
  Tensor<T>& host_mut() {
    host();
    device_.reset();
    on_host_ = true;
    return host_;
  }
  // Its elements in `memory`, copied there when not yet held there. Throws LoomError for a value
  // that holds no elements.
  const DeviceArray<T>& on(const DeviceMemory<T>& memory) const {
    if (device_ && &device_->memory() == &memory) return *device_;
    host();
    device_.reset();
    if (host_.data.size() != Tensor<T>::element_count(host_.dims))
      throw LoomError("a value of dims " + Tensor<T>::dims_text(host_.dims) + " holds no elements to copy to a device");
    device_ = memory.copy_from_host(host_.data.data(), host_.data.size());
    return *device_;
  }
  // The same, to change: the host copy is dropped, and an array shared with a copy of this value
  // is copied first.
  DeviceArray<T>& on_mut(const DeviceMemory<T>& memory) {
    on(memory);
    if (device_.use_count() > 1) device_ = memory.copy(*device_);
    host_.data = {};
    on_host_ = false;
    return *device_;
  }
  // A copy with other dims of as many elements (a reshape).
  Value with_dims(std::vector<std::int64_t> dims) const {
    Value copy(*this);
    copy.host_.dims = std::move(dims);
    return copy;
  }
  // The array it holds on a device, if any.
  const DeviceArray<T>* device() const { return device_.get(); }

 private:
  mutable Tensor<T> host_;  // dims always; data while on_host_
  mutable bool on_host_ = false;
  mutable std::shared_ptr<DeviceArray<T>> device_;
};

template <class T>
using NamedValues = std::map<std::string, Value<T>>;

// into += add, where they lie: on the device when both are there (or `into` is and `add` is
// copied there), else in host memory. An empty `into` takes `add` as it is.
template <class T>
void add_into(Value<T>& into, Value<T> add) {
  if (into.empty()) {
    into = std::move(add);
    return;
  }
  if (const DeviceArray<T>* there = into.device()) {
    const DeviceMemory<T>& memory = there->memory();
    const DeviceArray<T>& more = add.on(memory);
    memory.add(into.on_mut(memory), more);
    return;
  }
  Tensor<T>& sum = into.host_mut();
  const Tensor<T>& more = add.host();
  for (std::size_t i = 0; i < sum.data.size(); ++i) sum.data[i] += more.data[i];
}

// Zeros of `dims`, in `like`'s device memory when it holds its elements on a device.
template <class T>
Value<T> zeros_like(const std::vector<std::int64_t>& dims, const Value<T>* like) {
  if (like && like->device()) return Value<T>(dims, like->device()->memory().zeros(Tensor<T>::element_count(dims)));
  return Value<T>(Tensor<T>(dims, T(0)));
}

// Pointers to each value, for calls that take their inputs by pointer.
template <class T>
std::vector<const Value<T>*> pointers(const std::vector<Value<T>>& values) {
  std::vector<const Value<T>*> out;
  for (const auto& v : values) out.push_back(&v);
  return out;
}

// Host values holding copies of the tensors.
template <class T>
std::vector<Value<T>> copies_of(const std::vector<const Tensor<T>*>& tensors) {
  std::vector<Value<T>> out;
  for (const Tensor<T>* t : tensors) out.emplace_back(*t);
  return out;
}

// Each value's elements in host memory; an empty value gives an empty tensor.
template <class T>
std::vector<Tensor<T>> host_results(const std::vector<Value<T>>& values) {
  std::vector<Tensor<T>> out;
  for (const Value<T>& v : values) out.push_back(v.empty() ? Tensor<T>{} : v.host());
  return out;
}

template <class T>
NamedValues<T> to_values(NamedTensors<T> tensors) {
  NamedValues<T> out;
  for (auto& [name, t] : tensors) out.emplace(name, Value<T>(std::move(t)));
  return out;
}

// Waits for the work queued on the devices that hold any of `values`.
template <class T>
void finish_devices(const NamedValues<T>& values) {
  const DeviceMemory<T>* last = nullptr;
  for (const auto& [name, v] : values)
    if (const DeviceArray<T>* a = v.device(); a && &a->memory() != last) {
      last = &a->memory();
      last->finish();
    }
}

template <class T>
NamedTensors<T> to_host(const NamedValues<T>& values) {
  NamedTensors<T> out;
  for (const auto& [name, v] : values) out.emplace(name, v.host());
  return out;
}

}  // namespace loom::runtime
