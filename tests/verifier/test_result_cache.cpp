#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "loom/verifier/result_cache.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/verify.hpp"
#include "verifier_test_support.hpp"

namespace loom::verifier {
namespace {

namespace fs = std::filesystem;
using pcg::Verification;
using pcg::VerificationStatus;

CacheContext context(std::map<std::string, std::string> axioms, unsigned timeout = 1000) {
  return CacheContext{"forms-1", std::move(axioms), timeout, false, {}};
}

Verification proved_with(std::vector<std::string> core) {
  Verification v;
  v.status = VerificationStatus::Proved;
  v.core = std::move(core);
  return v;
}

class TempDir {
 public:
  TempDir()
      : path_(fs::temp_directory_path() / ("loom-verify-cache-test-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                           "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

TEST(ResultCache, ProofSurvivesAddedAxiomsButNotTheRemovalOfOneItUsed) {
  ResultCache cache;
  cache.store("rule r", context({{"a", "1"}, {"b", "2"}}), proved_with({"a"}));
  EXPECT_TRUE(cache.lookup("rule r", context({{"a", "1"}, {"b", "2"}})).has_value());
  EXPECT_TRUE(cache.lookup("rule r", context({{"a", "1"}, {"b", "2"}, {"c", "3"}})).has_value());  // added c
  EXPECT_TRUE(cache.lookup("rule r", context({{"a", "1"}})).has_value());                          // removed b: unused
  EXPECT_FALSE(cache.lookup("rule r", context({{"b", "2"}})).has_value());                         // removed a
  EXPECT_FALSE(cache.lookup("rule r", context({{"a", "9"}, {"b", "2"}})).has_value());             // a changed
  EXPECT_FALSE(cache.lookup("rule other", context({{"a", "1"}})).has_value());
  const auto hit = cache.lookup("rule r", context({{"a", "1"}}));
  EXPECT_EQ(hit->core, (std::vector<std::string>{"a"}));
}

TEST(ResultCache, RawCoreIsNotReusedWhenMinimalCoresAreWanted) {
  ResultCache cache;
  CacheContext raw = context({{"a", "1"}, {"b", "2"}});
  CacheContext minimal = raw;
  minimal.minimal_cores = true;
  cache.store("rule r", raw, proved_with({"a", "b"}));
  EXPECT_FALSE(cache.lookup("rule r", minimal).has_value());
  cache.store("rule r", minimal, proved_with({"a"}));
  EXPECT_TRUE(cache.lookup("rule r", minimal).has_value());
  EXPECT_TRUE(cache.lookup("rule r", raw).has_value());  // a minimal core serves both
}

TEST(ResultCache, UnknownIsRecheckedWhenTheAxiomsChangeOrTheTimeoutGrows) {
  ResultCache cache;
  Verification unknown;
  unknown.reason = "timeout after 1000 ms";
  cache.store("rule r", context({{"a", "1"}}), unknown);
  EXPECT_TRUE(cache.lookup("rule r", context({{"a", "1"}})).has_value());
  EXPECT_TRUE(cache.lookup("rule r", context({{"a", "1"}}, 500)).has_value());
  EXPECT_FALSE(cache.lookup("rule r", context({{"a", "1"}}, 5000)).has_value());
  EXPECT_FALSE(cache.lookup("rule r", context({{"a", "1"}, {"b", "2"}})).has_value());
}

TEST(ResultCache, RefutationDependsOnlyOnTheForms) {
  ResultCache cache;
  Verification refuted;
  refuted.status = VerificationStatus::Refuted;
  refuted.counterexample = "on x = ...";
  cache.store("rule r", context({{"a", "1"}}), refuted);
  EXPECT_EQ(cache.lookup("rule r", context({}))->counterexample, "on x = ...");
  EXPECT_FALSE(cache.lookup("rule r", CacheContext{"forms-2", {}, 1000, false, {}}).has_value());
}

TEST(ResultCache, SavesAndLoads) {
  TempDir dir;
  ResultCache cache;
  cache.store("rule r", context({{"a", "1"}}), proved_with({"a"}));
  cache.save(dir.file("sub/cache.json"));
  const auto loaded = ResultCache::load(dir.file("sub/cache.json"));
  EXPECT_EQ(loaded.size(), 1u);
  EXPECT_TRUE(loaded.lookup("rule r", context({{"a", "1"}})).has_value());
  EXPECT_EQ(ResultCache::load(dir.file("missing.json")).size(), 0u);
}

TEST(ResultCache, NotACacheIsAnErrorNamingTheFile) {
  TempDir dir;
  std::ofstream(dir.file("bad.json")) << "{\"format\": \"loom-rules\"}";
  try {
    ResultCache::load(dir.file("bad.json"));
    FAIL() << "accepted a file that is not a cache";
  } catch (const LoomError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json: not a Loom verification cache"), std::string::npos) << e.what();
  }
  std::ofstream(dir.file("broken.json")) << "{";
  EXPECT_THROW(ResultCache::load(dir.file("broken.json")), LoomError);
}

TEST(ResultCache, SecondRunComesFromTheCacheAndAddingAnAxiomKeepsProofs) {
  const auto& lib = testing::core_library();
  const auto& axioms = testing::core_axioms();
  const auto rules = obligations_from_library(lib);
  ResultCache cache;
  VerifyOptions options;
  options.cache = &cache;
  // First run without one axiom: relu_rows is then unknown, the two matmul rules are proved.
  options.without = {"relu_partition_rows"};
  const auto first = verify(lib, axioms, rules, options);
  EXPECT_EQ(first.count(VerificationStatus::Proved), 2u);
  EXPECT_EQ(first.count(VerificationStatus::Unknown), 1u);
  // Adding the axiom back: the proofs come from the cache, the unknown rule is re-checked.
  options.without.clear();
  const auto second = verify(lib, axioms, rules, options);
  EXPECT_EQ(second.count(VerificationStatus::Proved), 3u);
  for (std::size_t i = 0; i < rules.size(); ++i) EXPECT_EQ(second.verdicts[i].cached, rules[i].name != "relu_rows") << rules[i].name;
  // Nothing changed: everything from the cache, with the same results.
  const auto third = verify(lib, axioms, rules, options);
  for (std::size_t i = 0; i < rules.size(); ++i) {
    EXPECT_TRUE(third.verdicts[i].cached);
    EXPECT_EQ(third.verdicts[i].verification.core, second.verdicts[i].verification.core);
  }
}

}  // namespace
}  // namespace loom::verifier
