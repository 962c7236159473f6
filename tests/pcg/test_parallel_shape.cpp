#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "error_text.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/parallel_shape.hpp"

namespace loom::pcg {
namespace {

using nlohmann::json;
using test_support::contains;
using test_support::error_of;

ParallelShape make(std::vector<std::int64_t> dims, std::vector<std::int64_t> D, std::vector<std::int64_t> P, std::int64_t V = 1,
                   std::int64_t R = 1) {
  ParallelShape s;
  s.dims = std::move(dims);
  s.D = std::move(D);
  s.P = std::move(P);
  s.V = V;
  s.R = R;
  return s;
}

// The complaint about reading `text` as a ParallelShape, or "" when it reads fine.
std::string parse_error(const char* text) {
  return error_of([text] { json::parse(text).get<ParallelShape>(); });
}

TEST(ParallelShape, UnpartitionedHasAllDegreesOne) {
  const ParallelShape s = ParallelShape::unpartitioned({8, 4, 2});
  EXPECT_EQ(s.dims, (std::vector<std::int64_t>{8, 4, 2}));
  EXPECT_EQ(s.D, (std::vector<std::int64_t>{1, 1, 1}));
  EXPECT_EQ(s.P, (std::vector<std::int64_t>{1, 1, 1}));
  EXPECT_EQ(s.V, 1);
  EXPECT_EQ(s.R, 1);
  EXPECT_EQ(s.rank(), 3u);
  EXPECT_TRUE(s.is_unpartitioned());
  EXPECT_EQ(s.tasks(), 1);
}

TEST(ParallelShape, PartitionedTakesTheDegreesGiven) {
  const ParallelShape s = ParallelShape::partitioned({8, 6}, {2, 3}, 2, 4);
  EXPECT_EQ(s.dims, (std::vector<std::int64_t>{8, 6}));
  EXPECT_EQ(s.D, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(s.P, (std::vector<std::int64_t>{1, 1}));
  EXPECT_EQ(s.V, 2);
  EXPECT_EQ(s.R, 4);
  EXPECT_EQ(s.tasks(), 48);
  EXPECT_EQ(ParallelShape::partitioned({8, 6}), ParallelShape::unpartitioned({8, 6}));
  EXPECT_EQ(ParallelShape::partitioned({8, 6}, {}, 1, 3).D, (std::vector<std::int64_t>{1, 1}));
}

TEST(ParallelShape, CountsTasksElementsAndPieces) {
  const ParallelShape s = make({8, 6}, {2, 3}, {2, 1}, 5, 7);
  EXPECT_EQ(s.tasks(), 2 * 3 * 5 * 7);
  EXPECT_EQ(s.elements(), 48);
  EXPECT_EQ(s.piece_dims(), (std::vector<std::int64_t>{2, 2}));
  EXPECT_FALSE(s.is_unpartitioned());
}

TEST(ParallelShape, AnySingleDegreeMakesItPartitioned) {
  EXPECT_FALSE(make({4}, {2}, {1}).is_unpartitioned());
  EXPECT_FALSE(make({4}, {1}, {2}).is_unpartitioned());
  EXPECT_FALSE(make({4}, {1}, {1}, 2).is_unpartitioned());
  EXPECT_FALSE(make({4}, {1}, {1}, 1, 2).is_unpartitioned());
}

TEST(ParallelShape, ToStringShowsOnlyNonTrivialDegrees) {
  EXPECT_EQ(ParallelShape::unpartitioned({8, 4}).to_string(), "[8, 4]");
  EXPECT_EQ(make({8, 4}, {1, 2}, {1, 1}, 2, 2).to_string(), "[8, 4/2]{V2,R2}");
  EXPECT_EQ(make({8, 4}, {1, 1}, {1, 1}, 3, 1).to_string(), "[8, 4]{V3}");
  EXPECT_EQ(make({8, 4}, {1, 1}, {1, 1}, 1, 4).to_string(), "[8, 4]{R4}");
  EXPECT_EQ(make({8, 4}, {1, 1}, {2, 1}).to_string(), "[8|2, 4]");
  EXPECT_EQ(make({8}, {2}, {2}).to_string(), "[8/2|2]");
  EXPECT_EQ(ParallelShape::unpartitioned({}).to_string(), "[]");
}

TEST(ParallelShape, JsonHasTheDocumentedLayout) {
  const json j = make({8, 4}, {2, 1}, {1, 2}, 3, 1);
  EXPECT_EQ(j, json::parse(R"({"dims":[8,4],"D":[2,1],"P":[1,2],"V":3,"R":1})"));
}

TEST(ParallelShape, JsonRoundTrips) {
  const ParallelShape s = make({16, 6}, {4, 3}, {2, 1}, 2, 5);
  EXPECT_EQ(json(s).get<ParallelShape>(), s);
  const ParallelShape scalar = ParallelShape::unpartitioned({});
  EXPECT_EQ(json(scalar).get<ParallelShape>(), scalar);
}

TEST(ParallelShape, FromJsonDefaultsLeftOutDegreesToOne) {
  const auto s = json::parse(R"({"dims":[8,4],"V":2})").get<ParallelShape>();
  ParallelShape expected = ParallelShape::unpartitioned({8, 4});
  expected.V = 2;
  EXPECT_EQ(s, expected);
}

TEST(ParallelShape, FromJsonRejectsWrongRank) {
  const std::string message = parse_error(R"({"dims":[8,4],"D":[1,1,1]})");
  EXPECT_TRUE(contains(message, "'D' has 3 entries"));
  EXPECT_TRUE(contains(message, "rank 2"));
  EXPECT_TRUE(contains(parse_error(R"({"dims":[8],"P":[]})"), "'P' has 0 entries"));
}

TEST(ParallelShape, FromJsonRejectsNonPositiveValues) {
  EXPECT_TRUE(contains(parse_error(R"({"dims":[8,0]})"), "'dims[1]' must be at least 1, got 0"));
  EXPECT_TRUE(contains(parse_error(R"({"dims":[8],"D":[-2]})"), "'D[0]' must be at least 1, got -2"));
  EXPECT_TRUE(contains(parse_error(R"({"dims":[8],"V":0})"), "'V' must be at least 1"));
  EXPECT_TRUE(contains(parse_error(R"({"dims":[8],"R":-1})"), "'R' must be at least 1"));
}

TEST(ParallelShape, FromJsonRejectsUnevenShards) {
  const std::string message = parse_error(R"({"dims":[6],"D":[2],"P":[2]})");
  EXPECT_TRUE(contains(message, "dimension 0 of size 6"));
}

TEST(ParallelShape, FromJsonRejectsMalformedInput) {
  EXPECT_TRUE(contains(parse_error(R"({"D":[1]})"), "'dims'"));
  EXPECT_TRUE(contains(parse_error(R"({"dims":[8],"X":1})"), "unknown key 'X'"));
  EXPECT_TRUE(contains(parse_error(R"({"dims":[8.5]})"), "'dims[0]' must be an integer"));
  EXPECT_TRUE(contains(parse_error(R"({"dims":8})"), "'dims' must be an array"));
  EXPECT_TRUE(contains(parse_error(R"([8, 4])"), "an object"));
}

TEST(ParallelShape, FromJsonLeavesTargetUntouchedOnError) {
  ParallelShape s = ParallelShape::unpartitioned({3});
  EXPECT_THROW(from_json(json::parse(R"({"dims":[8],"D":[3]})"), s), LoomError);
  EXPECT_EQ(s, ParallelShape::unpartitioned({3}));
}

TEST(ParallelShape, ValidateRejectsCountsBeyond64Bits) {
  const std::int64_t big = std::int64_t{1} << 40;
  EXPECT_TRUE(contains(error_of([&] { ParallelShape::unpartitioned({big, big}).validate(); }), "element count"));
  EXPECT_TRUE(contains(error_of([&] { make({big, big}, {big, 1}, {1, 1}, 1, big).validate(); }), "does not fit in 64 bits"));
  EXPECT_NO_THROW(make({8, 4}, {2, 4}, {2, 1}, 3, 3).validate());
}

}  // namespace
}  // namespace loom::pcg
