// The rules `loom optimize` takes: the bundled libraries by default, each rule once, and no two
// different rules under one id, since plans name rules by id.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "loom/verifier/rule_selection.hpp"
#include "verifier_test_support.hpp"

namespace loom::verifier {
namespace {

std::vector<std::string> specs() { return {spec::Library::default_specs_dir()}; }

TEST(RuleSelection, TheBundledLibrariesAreProvedWithDistinctIds) {
  const std::vector<std::string> files = bundled_rule_libraries();
  ASSERT_EQ(files.size(), 3u);
  const RuleSelection s = select_rules(testing::bundled(), specs(), files, false);
  EXPECT_TRUE(s.unproved.empty()) << s.unproved.front();
  // The generated rules Z3 did not prove over their declared shapes are left out, by name.
  std::size_t not_proved = 0;
  for (const auto& file : files) {
    const nlohmann::json library = nlohmann::json::parse(std::ifstream(file));
    for (const auto& r : library.at("rules")) not_proved += r.at("verification").at("status") != "proved";
  }
  EXPECT_EQ(s.left_out.size(), not_proved);
  for (const auto& why : s.left_out) EXPECT_NE(why.find("generated.verified.json: rule g"), std::string::npos) << why;
  std::set<std::string> ids;
  for (const pcg::Rule& r : s.rules) EXPECT_TRUE(ids.insert(r.id).second) << r.id;
  EXPECT_TRUE(ids.count("fuse_matmul_relu"));
  EXPECT_TRUE(ids.count("f0055"));  // ReLUs of concatenated feature maps
  EXPECT_GT(ids.size(), 1000u);
}

TEST(RuleSelection, TheSameRuleTwiceIsTakenOnceAndTwoRulesUnderOneIdAreRefused) {
  const std::string hand = spec::Library::default_specs_dir() + "/rules/unity.verified.json";
  const std::size_t once = select_rules(testing::bundled(), specs(), {hand}, false).rules.size();
  EXPECT_EQ(select_rules(testing::bundled(), specs(), {hand, hand}, false).rules.size(), once);

  // Another library whose second rule takes the first rule's id.
  nlohmann::json clash = nlohmann::json::parse(std::ifstream(hand));
  ASSERT_GE(clash["rules"].size(), 2u);
  const std::string id = clash["rules"][0]["id"];
  clash["rules"][1]["id"] = id;
  const auto path = std::filesystem::temp_directory_path() / ("loom_rule_selection_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << clash.dump();
  try {
    select_rules(testing::bundled(), specs(), {hand, path.string()}, false);
    ADD_FAILURE() << "two rules under one id were taken";
  } catch (const LoomError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(path.string() + ": rule " + id), std::string::npos) << message;
    EXPECT_NE(message.find(hand), std::string::npos) << message;
  }
  std::filesystem::remove(path);
}

// A rule library that is no file, or is cut short, is refused with its path and the cause.
TEST(RuleSelection, AnUnreadableOrBrokenLibraryIsRefusedByName) {
  const auto directory = std::filesystem::temp_directory_path() / ("loom_rule_dir_" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  const auto cut = std::filesystem::temp_directory_path() / ("loom_rule_cut_" + std::to_string(::getpid()) + ".json");
  std::ofstream(cut) << R"({"format": "loom-rules", "version": 1, "rules": [)";
  const std::vector<std::pair<std::string, std::string>> cases{{directory.string(), "cannot open the rule library"},
                                                               {cut.string(), "not valid JSON"}};
  for (const auto& [path, cause] : cases) {
    try {
      select_rules(testing::bundled(), specs(), {path}, false);
      ADD_FAILURE() << path << " was taken";
    } catch (const LoomError& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
      EXPECT_NE(message.find(cause), std::string::npos) << message;
    }
  }
  std::filesystem::remove(directory);
  std::filesystem::remove(cut);
}

}  // namespace
}  // namespace loom::verifier
