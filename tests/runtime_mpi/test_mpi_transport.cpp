// MpiTransport's operations under mpiexec -np 2 and -np 4, checked against the arithmetic:
// exchanges, sums, all-gathers and reduce-scatters over all ranks and over groups, the rank
// timeout's parsing, and bad input and MPI errors coming back as LoomErrors.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "loom/pcg/diagnostic.hpp"
#include "mpi_world.hpp"
#include "passing_transport.hpp"

namespace loom::runtime {
namespace {

using mpi_test::world;

// The message of the LoomError `f` throws; fails the test when it throws none.
template <class F>
std::string loom_error_of(F&& f) {
  try {
    f();
  } catch (const LoomError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a LoomError";
  return {};
}

TEST(RankTimeout, ReadsSecondsFromTheEnvironmentValue) {
  EXPECT_EQ(rank_timeout(nullptr, Seconds(300)).count(), 300.0);
  EXPECT_EQ(rank_timeout("3", Seconds(300)).count(), 3.0);
  EXPECT_EQ(rank_timeout("2.5", Seconds(300)).count(), 2.5);
  for (const char* bad : {"", "soon", "3s", "0", "-1", "inf", "nan"})
    EXPECT_NE(loom_error_of([&] { rank_timeout(bad, Seconds(300)); }).find("LOOM_RANK_TIMEOUT='" + std::string(bad) + "'"),
              std::string::npos)
        << bad;
}

TEST(MpiTransport, ExchangesAroundARing) {
  const int next = (world().rank() + 1) % world().size();
  const int previous = (world().rank() + world().size() - 1) % world().size();
  std::vector<double> from_previous(2);
  std::vector<Outgoing<double>> sends{{next, {1.0 * world().rank(), 10.0 * world().rank()}}};
  std::vector<Incoming<double>> receives{{previous, &from_previous}};
  world().exchange(sends, receives);
  EXPECT_EQ(from_previous, (std::vector<double>{1.0 * previous, 10.0 * previous}));
}

// Two processes sending to each other at once, each before it receives: with sends ahead neither
// waits for the other to receive, whatever the messages' size (large ones are not buffered by MPI).
TEST(MpiTransport, SendsAheadDoNotWaitForTheirReceivers) {
  const int rank = world().rank();
  const int peer = rank ^ 1;
  if (peer >= world().size()) GTEST_FAIL() << "start it with an even number of processes";
  const std::size_t count = 1 << 20;
  world().send_ahead(true);
  for (int round = 0; round < 3; ++round) {
    std::vector<Outgoing<double>> sends{{peer, std::vector<double>(count, 100.0 * rank + round)}};
    std::vector<Incoming<double>> none;
    world().exchange(sends, none);
    sends.front().data.assign(count, -1.0);  // the message went from a copy
    std::vector<double> got(count);
    std::vector<Outgoing<double>> no_sends;
    std::vector<Incoming<double>> receives{{peer, &got}};
    world().exchange(no_sends, receives);
    EXPECT_EQ(got.front(), 100.0 * peer + round);
    EXPECT_EQ(got.back(), 100.0 * peer + round);
  }
  world().finish_sends();
  world().send_ahead(false);
}

TEST(MpiTransport, SumsOverAllRanks) {
  const int n = world().size();
  std::vector<float> values{static_cast<float>(world().rank() + 1), 0.5f};
  world().sum(values);
  EXPECT_EQ(values, (std::vector<float>{static_cast<float>(n * (n + 1) / 2), 0.5f * static_cast<float>(n)}));
}

TEST(MpiTransport, SumsOverPairsThenOverAllFour) {
  if (world().size() != 4) GTEST_SKIP() << "needs exactly 4 ranks (mpiexec -np 4); this run has " << world().size();
  const int r = world().rank();
  const std::vector<int> pair = r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
  // Twice, so the second round sums over the communicators made in the first.
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<float> pair_values{static_cast<float>(r + 1), 100.0f * static_cast<float>(r + 1)};
    world().sum(pair_values, pair);
    EXPECT_EQ(pair_values, r < 2 ? (std::vector<float>{3.0f, 300.0f}) : (std::vector<float>{7.0f, 700.0f}));

    std::vector<double> all_values{static_cast<double>(r + 1), 0.25 * (r + 1)};
    world().sum(all_values, {0, 1, 2, 3});
    EXPECT_EQ(all_values, (std::vector<double>{10.0, 2.5}));

    std::vector<double> pair_doubles{0.5 * r};
    world().sum(pair_doubles, pair);
    EXPECT_EQ(pair_doubles[0], r < 2 ? 0.5 : 2.5);
  }
}

// Ranks of this run with the parity of this process's: {0, 2} and {1, 3} at np 4, {0} and {1} at np 2.
std::vector<int> same_parity() {
  std::vector<int> group;
  for (int r = world().rank() % 2; r < world().size(); r += 2) group.push_back(r);
  return group;
}

// The value rank `r` gives at position `i` of a collective, different for every pair.
double given(int r, std::size_t i) { return 100.0 * (r + 1) + static_cast<double>(i) * 0.5; }

// Sums started over all ranks and over a group finish with the sums, and a blocking sum over
// the same ranks runs while they are in flight.
TEST(MpiTransport, StartedSumsFinishWithTheirSums) {
  const int n = world().size();
  const int r = world().rank();
  std::vector<int> everyone(static_cast<std::size_t>(n));
  std::iota(everyone.begin(), everyone.end(), 0);
  const std::vector<int> parity = same_parity();
  float parity_sum = 0;
  for (int k : parity) parity_sum += static_cast<float>(k + 1);

  std::vector<double> over_all{r + 1.0, 2.0};
  std::vector<float> over_parity{static_cast<float>(r + 1)};
  world().start_sum(over_all, everyone);
  world().start_sum(over_parity, parity);
  std::vector<double> blocking{1.0};
  world().sum(blocking);
  world().progress();
  world().finish_sums();
  EXPECT_EQ(over_all, (std::vector<double>{n * (n + 1) / 2.0, 2.0 * n}));
  EXPECT_EQ(over_parity, std::vector<float>{parity_sum});
  EXPECT_EQ(blocking, std::vector<double>{1.0 * n});
  world().finish_sums();  // nothing started: returns at once
}

// This rank's first `count` given values.
template <class T>
std::vector<T> givens(std::size_t count) {
  std::vector<T> out;
  for (std::size_t i = 0; i < count; ++i) out.push_back(static_cast<T>(given(world().rank(), i)));
  return out;
}

// all_gather over `group`, in float and double, checked against each rank's values laid end to end.
void expect_all_gather(const std::vector<int>& group) {
  const std::size_t n = 3;
  std::vector<double> doubles = givens<double>(n);
  std::vector<float> floats = givens<float>(n);
  world().all_gather(doubles, group);
  world().all_gather(floats, group);
  ASSERT_EQ(doubles.size(), n * group.size());
  ASSERT_EQ(floats.size(), n * group.size());
  for (std::size_t k = 0; k < group.size(); ++k)
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(doubles[k * n + i], given(group[k], i)) << "block " << k << " value " << i;
      EXPECT_EQ(floats[k * n + i], static_cast<float>(given(group[k], i))) << "block " << k << " value " << i;
    }
}

// reduce_scatter over `group`, in float and double: block k of the sum, k this rank's place.
void expect_reduce_scatter(const std::vector<int>& group) {
  const std::size_t n = 2, k = static_cast<std::size_t>(std::find(group.begin(), group.end(), world().rank()) - group.begin());
  std::vector<double> doubles = givens<double>(n * group.size());
  std::vector<float> floats = givens<float>(n * group.size());
  world().reduce_scatter(doubles, group);
  world().reduce_scatter(floats, group);
  ASSERT_EQ(doubles.size(), n);
  ASSERT_EQ(floats.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int r : group) sum += given(r, k * n + i);
    EXPECT_EQ(doubles[i], sum) << "value " << i;
    EXPECT_FLOAT_EQ(floats[i], static_cast<float>(sum)) << "value " << i;
  }
}

// all_to_all over `group`, in float and double: block j from this rank goes to group[j], and block
// j received is what group[j] gave this rank.
void expect_all_to_all(const std::vector<int>& group) {
  const std::size_t n = 2, k = static_cast<std::size_t>(std::find(group.begin(), group.end(), world().rank()) - group.begin());
  std::vector<double> doubles = givens<double>(n * group.size());
  std::vector<float> floats = givens<float>(n * group.size());
  world().all_to_all(doubles, group);
  world().all_to_all(floats, group);
  ASSERT_EQ(doubles.size(), n * group.size());
  ASSERT_EQ(floats.size(), n * group.size());
  for (std::size_t j = 0; j < group.size(); ++j)
    for (std::size_t i = 0; i < n; ++i) {
      EXPECT_EQ(doubles[j * n + i], given(group[j], k * n + i)) << "block " << j << " value " << i;
      EXPECT_EQ(floats[j * n + i], static_cast<float>(given(group[j], k * n + i))) << "block " << j << " value " << i;
    }
}

TEST(MpiTransport, AllToAllsOverAllRanksAndOverSubgroups) {
  std::vector<int> everyone;
  for (int r = 0; r < world().size(); ++r) everyone.push_back(r);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    expect_all_to_all(everyone);
    expect_all_to_all(same_parity());
  }
}

// The point-to-point all-to-all a transport without its own gets: the same blocks.
TEST(MpiTransport, TheDefaultAllToAllByMessagesGivesTheSameBlocks) {
  struct MessagesOnly final : mpi_test::PassingTransport {
    using PassingTransport::PassingTransport;
    void swap_blocks(HostValues m, HostValues t, const std::vector<int>& g) override { Transport::swap_blocks(m, t, g); }
    void pass(const char*, const std::function<void()>& call) override { call(); }
  };
  MessagesOnly messages(world());
  std::vector<int> everyone;
  for (int r = 0; r < world().size(); ++r) everyone.push_back(r);
  const std::size_t n = 3;
  std::vector<double> by_mpi = givens<double>(n * everyone.size()), by_messages = by_mpi;
  world().all_to_all(by_mpi, everyone);
  messages.all_to_all(by_messages, everyone);
  EXPECT_EQ(by_messages, by_mpi);
}

TEST(MpiTransport, AllGathersOverAllRanksAndOverSubgroups) {
  std::vector<int> everyone;
  for (int r = 0; r < world().size(); ++r) everyone.push_back(r);
  // Twice, so the second round runs on the communicators made in the first.
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    expect_all_gather(everyone);
    expect_all_gather(same_parity());
  }
}

TEST(MpiTransport, ReduceScattersOverAllRanksAndOverSubgroups) {
  std::vector<int> everyone;
  for (int r = 0; r < world().size(); ++r) everyone.push_back(r);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    expect_reduce_scatter(everyone);
    expect_reduce_scatter(same_parity());
  }
}

TEST(MpiTransport, BadCollectiveInputIsALoomError) {
  const int n = world().size();
  std::vector<double> values{1.0, 2.0, 3.0};
  EXPECT_NE(loom_error_of([&] {
              world().reduce_scatter(values, {0, 1});
            }).find("3 values do not split into 2 equal blocks"),
            std::string::npos);
  const int other = (world().rank() + 1) % n;
  EXPECT_NE(loom_error_of([&] { world().all_gather(values, {other}); })
                .find("MpiTransport::all_gather over the group {" + std::to_string(other) + "}: this process, rank " +
                      std::to_string(world().rank()) + ", is not in it"),
            std::string::npos);
  EXPECT_EQ(values, (std::vector<double>{1.0, 2.0, 3.0}));
}

TEST(MpiTransport, ShortReceiveIsALoomError) {
  // Rank 0 sends four values where rank 1 expects two: MPI reports the truncation on rank 1.
  if (world().rank() == 0) {
    std::vector<Outgoing<float>> sends{{1, {1.0f, 2.0f, 3.0f, 4.0f}}};
    std::vector<Incoming<float>> none;
    world().exchange(sends, none);
  } else if (world().rank() == 1) {
    std::vector<float> too_short(2);
    std::vector<Outgoing<float>> none;
    std::vector<Incoming<float>> receives{{0, &too_short}};
    const std::string message = loom_error_of([&] { world().exchange(none, receives); });
    EXPECT_NE(message.find("MpiTransport::exchange: MPI_Testsome failed"), std::string::npos) << message;
    EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  }
}

TEST(MpiTransport, BadRanksAreLoomErrors) {
  const int n = world().size();
  std::vector<Outgoing<float>> to_nobody{{n, {1.0f}}};
  std::vector<Incoming<float>> none;
  EXPECT_NE(
      loom_error_of([&] {
        world().exchange(to_nobody, none);
      }).find("MpiTransport::exchange: a message to rank " + std::to_string(n) + ", but the run has ranks 0 to " + std::to_string(n - 1)),
      std::string::npos);

  std::vector<double> values{1.0};
  const int other = (world().rank() + 1) % n;
  EXPECT_NE(
      loom_error_of([&] { world().sum(values, {other}); }).find("this process, rank " + std::to_string(world().rank()) + ", is not in it"),
      std::string::npos);
  EXPECT_NE(loom_error_of([&] { world().sum(values, {1, 0}); }).find("ranks must be distinct and ascending"), std::string::npos);
  EXPECT_NE(loom_error_of([&] { world().sum(values, {0, n}); }).find("the run has ranks 0 to"), std::string::npos);
  EXPECT_NE(loom_error_of([&] { world().sum(values, {}); }).find("the group is empty"), std::string::npos);
  EXPECT_EQ(values, std::vector<double>{1.0});
}

}  // namespace
}  // namespace loom::runtime
