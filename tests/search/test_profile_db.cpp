#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "loom/pcg/diagnostic.hpp"
#include "loom/search/profile_db.hpp"

namespace loom::search {
namespace {

// A scratch directory removed when the test ends.
class ProfileFile : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() / ("loom_profile_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path() const { return (dir_ / "profile.json").string(); }
  void write(const std::string& text) const { std::ofstream(path()) << text; }

  // The message load() throws, or "" when it loads.
  std::string load_error() const {
    try {
      ProfileDatabase::load(path());
    } catch (const LoomError& e) {
      return e.what();
    }
    return "";
  }

 private:
  std::filesystem::path dir_;
};

const ProfileKey kRelu{"relu", {}, {pcg::ParallelShape::unpartitioned({8, 8})}, "V100"};

TEST(ProfileDatabase, RecordsMeasuredAndSimulatedFigures) {
  ProfileDatabase db;
  EXPECT_EQ(db.find(kRelu), nullptr);
  db.record(kRelu, 2e-5, 1e-5, 4);
  const ProfileEntry* e = db.find(kRelu);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->op, "relu");
  EXPECT_EQ(e->device, "V100");
  EXPECT_DOUBLE_EQ(e->measured_seconds, 2e-5);
  EXPECT_EQ(e->simulated_seconds, 1e-5);
  EXPECT_EQ(e->samples, 4);
  EXPECT_DOUBLE_EQ(*e->roofline_error(), 1.0);  // measured twice the roofline
  EXPECT_EQ(db.seconds(kRelu), 2e-5);
  // Another device kind is another key.
  EXPECT_FALSE(db.seconds(ProfileKey{"relu", {}, kRelu.inputs, "P100"}));
}

TEST(ProfileDatabase, RecordingAKeyAgainAveragesBySamples) {
  ProfileDatabase db;
  db.record(kRelu, 4e-5, 1e-5, 3);
  db.record(kRelu, 8e-5, std::nullopt, 1);
  const ProfileEntry* e = db.find(kRelu);
  ASSERT_NE(e, nullptr);
  EXPECT_DOUBLE_EQ(e->measured_seconds, (3 * 4e-5 + 8e-5) / 4);
  EXPECT_EQ(e->samples, 4);
  EXPECT_EQ(e->simulated_seconds, 1e-5);  // kept: the second record gave none
  db.record(kRelu, 5e-5, 3e-5, 4);
  EXPECT_DOUBLE_EQ(db.find(kRelu)->measured_seconds, 5e-5);
  EXPECT_EQ(db.find(kRelu)->samples, 8);
  EXPECT_EQ(db.find(kRelu)->simulated_seconds, 3e-5);  // the newest
  EXPECT_EQ(db.size(), 1u);
}

TEST(ProfileDatabase, RejectsBadFigures) {
  ProfileDatabase db;
  EXPECT_THROW(db.record(kRelu, -1), LoomError);
  EXPECT_THROW(db.record(kRelu, 1e-5, 0.0), LoomError);
  try {
    db.record(kRelu, 1e-5, 1e-5, 0);
    ADD_FAILURE() << "zero samples recorded";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("at least one sample, got 0 for relu{} [8, 8] on V100"), std::string::npos) << e.what();
  }
  EXPECT_EQ(db.size(), 0u);
}

TEST(ProfileDatabase, BackwardTimesPoolTheirOwnSamples) {
  ProfileDatabase db;
  EXPECT_THROW(db.record_backward(kRelu, 1e-5), LoomError);  // no forward recorded yet
  db.record(kRelu, 4e-5, 1e-5, 3);
  EXPECT_FALSE(db.backward_seconds(kRelu));
  db.record_backward(kRelu, 6e-5, 2);
  db.record_backward(kRelu, 9e-5, 1);
  EXPECT_DOUBLE_EQ(*db.backward_seconds(kRelu), (2 * 6e-5 + 9e-5) / 3);
  EXPECT_EQ(db.find(kRelu)->backward_samples, 3);
  EXPECT_EQ(db.find(kRelu)->samples, 3);  // the forward's own count
  EXPECT_THROW(db.record_backward(kRelu, 0.0), LoomError);
  EXPECT_THROW(db.record_backward(kRelu, 1e-5, 0), LoomError);
}

TEST_F(ProfileFile, SavesAndLoadsVersion6) {
  EXPECT_EQ(ProfileDatabase::load(path()).size(), 0u);  // a missing file is an empty database
  ProfileDatabase db;
  db.record(kRelu, 2e-5, 1.5e-5, 3);
  db.record_backward(kRelu, 3.5e-5, 2);
  const ProfileKey matmul{"matmul", {}, {pcg::ParallelShape::unpartitioned({4, 8}), pcg::ParallelShape::unpartitioned({8, 2})}, "cpu"};
  db.record(matmul, 7e-6);
  db.save(path());
  std::ifstream in(path());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"version\": 6"), std::string::npos) << text;
  const ProfileDatabase back = ProfileDatabase::load(path());
  ASSERT_EQ(back.size(), 2u);
  const ProfileEntry* e = back.find(kRelu);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->measured_seconds, 2e-5);
  EXPECT_EQ(e->simulated_seconds, 1.5e-5);
  EXPECT_EQ(e->samples, 3);
  EXPECT_EQ(e->backward_seconds, 3.5e-5);
  EXPECT_EQ(e->backward_samples, 2);
  EXPECT_EQ(back.seconds(matmul), 7e-6);
  EXPECT_FALSE(back.find(matmul)->simulated_seconds);
  EXPECT_FALSE(back.backward_seconds(matmul));
  EXPECT_FALSE(e->alone);
}

TEST_F(ProfileFile, AFigureMeasuredAloneStaysSoUntilARunOfTheNodeAddsToIt) {
  ProfileDatabase db;
  db.record(kRelu, 2e-5, std::nullopt, 3, /*alone=*/true);
  db.save(path());
  ProfileDatabase back = ProfileDatabase::load(path());
  ASSERT_NE(back.find(kRelu), nullptr);
  EXPECT_TRUE(back.find(kRelu)->alone);
  back.record(kRelu, 4e-5, std::nullopt, 3, /*alone=*/true);
  EXPECT_TRUE(back.find(kRelu)->alone);
  back.record(kRelu, 4e-5, std::nullopt, 3);  // recorded in training
  EXPECT_FALSE(back.find(kRelu)->alone);
  // The mark is version 4's, 5's and 6's, and a mark is true or false.
  write(
      R"({"format": "loom-profile", "version": 3, "entries": [{"key": "k", "op": "relu", "device": "cpu", "measured_seconds": 1e-5, "samples": 1, "alone": true}]})");
  EXPECT_NE(load_error().find("entries[0].alone: unknown key"), std::string::npos) << load_error();
  write(
      R"({"format": "loom-profile", "version": 6, "entries": [{"key": "k", "op": "relu", "device": "cpu", "measured_seconds": 1e-5, "samples": 1, "alone": "yes"}]})");
  EXPECT_NE(load_error().find("entries[0].alone: expected true or false"), std::string::npos) << load_error();
}

TEST_F(ProfileFile, ReadsVersions4And5WithoutTheirFiguresMeasuredAlone) {
  // Measured alone on one input run again and again (4), or on inputs drawn evenly from -1 to 1
  // rather than the run's values (5): measured anew. Recorded in a run: kept. Version 6 keeps both.
  const ProfileKey matmul{"matmul", {}, {pcg::ParallelShape::unpartitioned({4, 8}), pcg::ParallelShape::unpartitioned({8, 2})}, "cpu"};
  for (int version : {4, 5, 6}) {
    write(R"({"format": "loom-profile", "version": )" + std::to_string(version) + R"(, "entries": [{"key": ")" + kRelu.to_string() +
          R"(", "op": "relu", "device": "cpu", "measured_seconds": 1e-5, "samples": 3, "alone": true}, {"key": ")" + matmul.to_string() +
          R"(", "op": "matmul", "device": "cpu", "measured_seconds": 2e-5, "samples": 30, "alone": false}]})");
    const ProfileDatabase db = ProfileDatabase::load(path());
    EXPECT_EQ(db.find(kRelu) != nullptr, version == 6) << version;
    ASSERT_NE(db.find(matmul), nullptr) << version;
    EXPECT_EQ(db.seconds(matmul), 2e-5);
    EXPECT_EQ(db.size(), version == 6 ? 2u : 1u) << version;
  }
}

TEST_F(ProfileFile, ReadsVersion2WithoutBackwardFigures) {
  write(R"({"format": "loom-profile", "version": 2, "entries": [{"key": ")" + kRelu.to_string() +
        R"(", "op": "relu", "device": "V100", "measured_seconds": 3e-5, "simulated_seconds": 1e-5, "samples": 4}]})");
  const ProfileDatabase db = ProfileDatabase::load(path());
  ASSERT_NE(db.find(kRelu), nullptr);
  EXPECT_EQ(db.find(kRelu)->samples, 4);
  EXPECT_FALSE(db.backward_seconds(kRelu));
  // Backward figures are version-3 fields.
  write(
      R"({"format": "loom-profile", "version": 2, "entries": [{"key": "k", "op": "relu", "device": "V100", "measured_seconds": 1e-5, "samples": 1, "backward_seconds": 1e-5, "backward_samples": 1}]})");
  EXPECT_NE(load_error().find("profile.json: entries[0].backward_"), std::string::npos) << load_error();
  EXPECT_NE(load_error().find("unknown key"), std::string::npos) << load_error();
}

TEST_F(ProfileFile, ReadsVersion1AsOneSampleWithoutASimulatedFigure) {
  write(R"({"format": "loom-profile", "version": 1, "entries": [{"key": ")" + kRelu.to_string() +
        R"(", "op": "relu", "device": "V100", "seconds": 3e-5}]})");
  ProfileDatabase db = ProfileDatabase::load(path());
  const ProfileEntry* e = db.find(kRelu);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->measured_seconds, 3e-5);
  EXPECT_EQ(e->samples, 1);
  EXPECT_FALSE(e->simulated_seconds);
  EXPECT_FALSE(e->roofline_error());
  // Recording on top of it averages with its one sample; saving writes version 5.
  db.record(kRelu, 1e-5, 2e-5);
  EXPECT_DOUBLE_EQ(db.find(kRelu)->measured_seconds, 2e-5);
  db.save(path());
  EXPECT_EQ(ProfileDatabase::load(path()).find(kRelu)->samples, 2);
}

TEST_F(ProfileFile, ErrorsNameTheFileAndJsonPath) {
  write(R"({"format": "loom-profile", "version": 1, "entries": [{"key": "k", "op": "relu", "device": "V100", "seconds": "fast"}]})");
  EXPECT_NE(load_error().find("profile.json: entries[0].seconds: expected a number"), std::string::npos) << load_error();
  // Version-1 fields are not version-2 fields, nor the other way round.
  write(R"({"format": "loom-profile", "version": 2, "entries": [{"key": "k", "op": "relu", "device": "V100", "seconds": 1e-5}]})");
  EXPECT_NE(load_error().find("profile.json: entries[0].seconds: unknown key"), std::string::npos) << load_error();
  write(
      R"({"format": "loom-profile", "version": 2, "entries": [{"key": "k", "op": "relu", "device": "V100", "measured_seconds": 1e-5, "samples": 0}]})");
  EXPECT_NE(load_error().find("profile.json: entries[0].samples: expected a count of at least 1, got 0"), std::string::npos)
      << load_error();
  write(
      R"({"format": "loom-profile", "version": 2, "entries": [{"key": "k", "op": "relu", "device": "V100", "measured_seconds": 1e-5, "samples": 1, "simulated_seconds": -2}]})");
  EXPECT_NE(load_error().find("profile.json: entries[0].simulated_seconds: expected a positive number"), std::string::npos) << load_error();
  write(
      R"({"format": "loom-profile", "version": 3, "entries": [{"key": "k", "op": "relu", "device": "V100", "measured_seconds": 1e-5, "samples": 1, "backward_seconds": 1e-5}]})");
  EXPECT_NE(load_error().find("profile.json: entries[0]: missing \"backward_samples\""), std::string::npos) << load_error();
  write(R"({"format": "loom-profile", "version": 7, "entries": []})");
  EXPECT_NE(load_error().find("profile.json: version: unsupported version 7"), std::string::npos) << load_error();
}

}  // namespace
}  // namespace loom::search
