#include "loom/gui/background_job.hpp"

#include <stdexcept>

#include <gtest/gtest.h>

namespace loom::gui {
namespace {

TEST(BackgroundJob, WorkThatThrowsEndsWithItsMessageKept) {
  BackgroundJob job;
  bool finished = false;
  QObject::connect(&job, &BackgroundJob::finished, [&] { finished = true; });
  ASSERT_TRUE(job.start([](const std::atomic<bool>&) { throw std::runtime_error("sizes out of reach"); }));
  ASSERT_TRUE(job.wait(10000));
  EXPECT_TRUE(finished);
  EXPECT_EQ(job.error().toStdString(), "sizes out of reach");
  // The next work starts afresh, without the old error.
  ASSERT_TRUE(job.start([](const std::atomic<bool>&) {}));
  ASSERT_TRUE(job.wait(10000));
  EXPECT_TRUE(job.error().isEmpty());
}

}  // namespace
}  // namespace loom::gui
