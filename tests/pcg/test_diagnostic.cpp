#include <gtest/gtest.h>

#include "loom/pcg/diagnostic.hpp"

namespace loom {
namespace {

TEST(SourceLocation, PrintsOnlyTheKnownParts) {
  EXPECT_EQ((SourceLocation{"a.loom", 3, 7}.to_string()), "a.loom:3:7");
  EXPECT_EQ((SourceLocation{"a.loom", 3, 0}.to_string()), "a.loom:3");
  EXPECT_EQ((SourceLocation{"a.loom", 0, 0}.to_string()), "a.loom");
  EXPECT_EQ((SourceLocation{"", 0, 0}.to_string()), "");
  EXPECT_EQ((SourceLocation{"", 4, 2}.to_string()), "4:2");
}

TEST(SourceLocation, ColumnWithoutLineIsDropped) { EXPECT_EQ((SourceLocation{"a.loom", 0, 5}.to_string()), "a.loom"); }

TEST(Diagnostic, PrefixesTheLocation) {
  EXPECT_EQ((Diagnostic{{"a.loom", 3, 7}, "bad index"}.to_string()), "a.loom:3:7: bad index");
  EXPECT_EQ((Diagnostic{{}, "bad index"}.to_string()), "bad index");
}

TEST(LoomError, WhatJoinsEveryDiagnostic) {
  const LoomError error({Diagnostic{{"a.loom", 1, 2}, "first"}, Diagnostic{{"b.loom", 3, 0}, "second"}});
  EXPECT_STREQ(error.what(), "a.loom:1:2: first\nb.loom:3: second");
  ASSERT_EQ(error.diagnostics().size(), 2u);
  EXPECT_EQ(error.diagnostics()[1].message, "second");
}

TEST(LoomError, PlainMessageBecomesOneDiagnostic) {
  const LoomError error("something broke");
  EXPECT_STREQ(error.what(), "something broke");
  ASSERT_EQ(error.diagnostics().size(), 1u);
  EXPECT_EQ(error.diagnostics()[0].message, "something broke");
  EXPECT_TRUE(error.diagnostics()[0].where.file.empty());
}

}  // namespace
}  // namespace loom
