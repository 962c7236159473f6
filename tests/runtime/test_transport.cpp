// The typed transport calls, written once over each transport's calls on HostValues, checked on
// the one-process transport and on one that records what reaches it.
#include <gtest/gtest.h>

#include "loom/pcg/diagnostic.hpp"
#include "loom/runtime/transport.hpp"

namespace loom::runtime {
namespace {

// Two processes, of which this is rank 1, that record what the typed calls hand down and answer
// gathers and scatters with known values.
struct RecordingProcesses final : Transport {
  int rank() const override { return 1; }
  int size() const override { return 2; }
  void move_values(const std::vector<Message>& sends, const std::vector<Message>& receives) override {
    for (const Message& r : receives) static_cast<float*>(r.values.data)[0] = static_cast<float>(r.peer) + 0.5f;
    sent = sends;
  }
  void sum_values(HostValues values, const std::vector<int>* group) override {
    summed = values;
    over_group = group != nullptr;
  }
  void gather_values(HostValues mine, HostValues all, const std::vector<int>&) override {
    auto* out = static_cast<double*>(all.data);
    for (std::size_t i = 0; i < all.count; ++i) out[i] = static_cast<double>(i) + static_cast<double*>(mine.data)[0];
  }
  void scatter_sums(HostValues all, HostValues mine, const std::vector<int>&) override {
    auto* out = static_cast<double*>(mine.data);
    for (std::size_t i = 0; i < mine.count; ++i) out[i] = static_cast<double*>(all.data)[mine.count + i] * 2;
  }
  std::vector<Message> sent;
  HostValues summed;
  bool over_group = false;
};

TEST(Transport, TypedCallsHandTheirBuffersDownWithTheElementType) {
  RecordingProcesses t;
  std::vector<float> got(3);
  std::vector<Outgoing<float>> sends{{0, {1, 2}}};
  std::vector<Incoming<float>> receives{{0, &got}};
  t.exchange(sends, receives);
  ASSERT_EQ(t.sent.size(), 1u);
  EXPECT_EQ(t.sent[0].peer, 0);
  EXPECT_EQ(t.sent[0].values.type, ElementType::Float32);
  EXPECT_EQ(t.sent[0].values.count, 2u);
  EXPECT_EQ(t.sent[0].values.bytes(), 2 * sizeof(float));
  EXPECT_EQ(got[0], 0.5f);

  std::vector<double> values{1, 2, 3, 4};
  t.sum(values);
  EXPECT_EQ(t.summed.type, ElementType::Float64);
  EXPECT_EQ(t.summed.data, values.data());
  EXPECT_FALSE(t.over_group);
  t.sum(values, {0, 1});
  EXPECT_TRUE(t.over_group);

  t.reduce_scatter(values, {0, 1});
  EXPECT_EQ(values, (std::vector<double>{6, 8})) << "rank 1 keeps the second block";
  t.all_gather(values, {0, 1});
  EXPECT_EQ(values, (std::vector<double>{6, 7, 8, 9})) << "two blocks of two";
}

TEST(Transport, AReduceScatterThatDoesNotSplitEvenlyIsRefused) {
  RecordingProcesses t;
  std::vector<double> values{1, 2, 3};
  try {
    t.reduce_scatter(values, {0, 1});
    FAIL() << "3 values split into 2 blocks";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("the group {0, 1}: 3 values do not split into 2 equal blocks"), std::string::npos) << e.what();
  }
  EXPECT_EQ(values.size(), 3u) << "nothing was changed";
}

TEST(LocalTransport, MessagesToItselfArriveAndItsGroupIsItselfAlone) {
  LocalTransport t;
  std::vector<double> got(2);
  std::vector<Outgoing<double>> sends{{0, {3, 4}}};
  std::vector<Incoming<double>> receives{{0, &got}};
  t.exchange(sends, receives);
  EXPECT_EQ(got, (std::vector<double>{3, 4}));
  std::vector<float> values{1, 2};
  t.sum(values, {0});
  t.all_gather(values, {0});
  t.reduce_scatter(values, {0});
  EXPECT_EQ(values, (std::vector<float>{1, 2}));

  std::vector<double> block(2), whole(3);
  try {
    t.gather_values(HostValues::of(block), HostValues::of(whole), {0});
    FAIL() << "a whole of 3 values taken for one block of 2";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("all_gather over the group {0}: 3 values are not 1 blocks of 2"), std::string::npos) << e.what();
  }
  std::vector<float> other_type(2);
  EXPECT_THROW(t.scatter_sums(HostValues::of(block), HostValues::of(other_type), {0}), LoomError);

  std::vector<double> too_small(1);
  std::vector<Incoming<double>> short_receive{{0, &too_small}};
  EXPECT_THROW(t.exchange(sends, short_receive), LoomError);
}

}  // namespace
}  // namespace loom::runtime
