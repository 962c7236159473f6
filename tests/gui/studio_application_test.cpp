#include "loom/gui/studio_application.hpp"

#include <stdexcept>

#include <QEvent>

#include <gtest/gtest.h>

namespace loom::gui {
namespace {

// An object whose event handler throws, as a slot of Studio might.
class Throwing : public QObject {
 public:
  bool event(QEvent*) override { throw std::runtime_error("a handler failed"); }
};

TEST(StudioApplication, AnExceptionFromAnEventHandlerIsReportedNotFatal) {
  auto* app = dynamic_cast<StudioApplication*>(QCoreApplication::instance());
  ASSERT_NE(app, nullptr) << "the tests run under Studio's application object";
  QString reported;
  app->on_error([&](const QString& error) { reported = error; });
  Throwing target;
  QEvent event(QEvent::User);
  EXPECT_FALSE(QCoreApplication::sendEvent(&target, &event));
  EXPECT_EQ(reported.toStdString(), "a handler failed");
  app->on_error({});
}

}  // namespace
}  // namespace loom::gui
