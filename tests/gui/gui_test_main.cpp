// Widgets are driven without a display: Qt renders them offscreen.
#include "loom/gui/studio_application.hpp"

#include <gtest/gtest.h>

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  loom::gui::StudioApplication app(argc, argv);  // as loom-studio runs
  QApplication::setOrganizationName("LoomTests");
  QApplication::setApplicationName("loom_gui_tests");
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
