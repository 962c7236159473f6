#pragma once
#include <gtest/gtest.h>

#include <string>

#include "loom/pcg/diagnostic.hpp"

namespace loom::pcg::test_support {

// The message of the LoomError that `f` throws, or "" when it throws none.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const LoomError& e) {
    return e.what();
  }
  return "";
}

// Use as EXPECT_TRUE(contains(text, part)); a failure prints both.
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

}  // namespace loom::pcg::test_support
