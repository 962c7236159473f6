// Values held on the host, on a device, or both (runtime/value.hpp), on a device whose memory lies
// in the host's (host_device.hpp), which counts the copies between the two.
#include <gtest/gtest.h>

#include "host_device.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/value.hpp"

namespace loom::runtime {
namespace {

using testing::HostDevice;

Tensor<double> counting(std::vector<std::int64_t> dims) {
  Tensor<double> t(std::move(dims));
  for (std::size_t i = 0; i < t.data.size(); ++i) t.data[i] = static_cast<double>(i + 1);
  return t;
}

TEST(Value, IsCopiedToTheDeviceOnceAndBackOnlyWhenChangedThere) {
  HostDevice<double> device;
  Value<double> v(counting({2, 3}));
  EXPECT_EQ(v.device(), nullptr);
  v.on(device);
  v.on(device);
  EXPECT_EQ(device.copies_from_host, 1u);
  EXPECT_EQ(v.host().data[5], 6.0);
  EXPECT_EQ(device.copies_to_host, 0u) << "the host copy was still good";
  HostDevice<double>::elements(v.on_mut(device))[5] = 60;
  EXPECT_EQ(v.host().data[5], 60.0);
  EXPECT_EQ(device.copies_to_host, 1u);
  EXPECT_EQ(v.dims(), (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(v.size(), 6u);
}

TEST(Value, ChangingTheHostCopyDropsTheDeviceCopy) {
  HostDevice<double> device;
  Value<double> v(counting({4}));
  v.on(device);
  v.host_mut().data[0] = -1;
  EXPECT_EQ(v.device(), nullptr);
  EXPECT_EQ(HostDevice<double>::elements(v.on(device))[0], -1.0);
  EXPECT_EQ(device.copies_from_host, 2u);
}

// A copy shares the device array until one of them changes it; the other keeps its elements.
TEST(Value, ACopySharesTheDeviceArrayUntilEitherChangesIt) {
  HostDevice<double> device;
  Value<double> original(counting({3}));
  original.on_mut(device);
  Value<double> copy = original;
  EXPECT_EQ(copy.device(), original.device());
  add_into(copy, Value<double>(counting({3})));
  EXPECT_NE(copy.device(), original.device());
  EXPECT_EQ(original.host().data, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(copy.host().data, (std::vector<double>{2, 4, 6}));
  const Value<double> reshaped = original.with_dims({1, 3});
  EXPECT_EQ(reshaped.dims(), (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(reshaped.host().data, original.host().data);
}

TEST(Value, AddsWhereTheTargetLies) {
  HostDevice<double> device;
  Value<double> on_device(counting({3}));
  on_device.on_mut(device);
  add_into(on_device, Value<double>(counting({3})));
  EXPECT_NE(on_device.device(), nullptr);
  EXPECT_EQ(on_device.host().data, (std::vector<double>{2, 4, 6}));

  Value<double> on_host(counting({3}));
  Value<double> from_device(counting({3}));
  from_device.on_mut(device);
  add_into(on_host, std::move(from_device));
  EXPECT_EQ(on_host.device(), nullptr);
  EXPECT_EQ(on_host.host().data, (std::vector<double>{2, 4, 6}));

  Value<double> empty;
  add_into(empty, Value<double>(counting({2})));
  EXPECT_EQ(empty.host().data, (std::vector<double>{1, 2}));

  const Value<double> zeros = zeros_like({2, 2}, &on_device);
  EXPECT_NE(zeros.device(), nullptr);
  EXPECT_EQ(zeros.host().data, std::vector<double>(4, 0.0));
  EXPECT_EQ(zeros_like<double>({2}, nullptr).device(), nullptr);
}

// A value held by one device's memory is moved through the host to the memory asked for.
TEST(Value, IsMovedToTheMemoryAskedFor) {
  HostDevice<double> first, second;
  Value<double> v(counting({3}));
  v.on_mut(first);
  EXPECT_EQ(&v.on(second).memory(), &second);
  EXPECT_EQ(HostDevice<double>::elements(*v.device()), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(first.copies_to_host, 1u);
  EXPECT_EQ(second.copies_from_host, 1u);
}

TEST(Value, AValueWithoutElementsCannotGoToADevice) {
  HostDevice<double> device;
  Value<double> nothing;
  EXPECT_TRUE(nothing.empty());
  EXPECT_EQ(nothing.size(), 0u);
  Value<double> dims_only(std::vector<std::int64_t>{2, 2}, nullptr);
  EXPECT_TRUE(dims_only.empty());
  EXPECT_THROW(dims_only.on(device), LoomError);
}

}  // namespace
}  // namespace loom::runtime
