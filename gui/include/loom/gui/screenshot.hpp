#pragma once
// The headless screenshot mode: the window rendered to a PNG once its work is done.
#include <QString>

#include "loom/gui/main_window.hpp"

namespace loom::gui {

// Shows `view`, waits for the work it started (an editor's axiom check is run first), renders the
// window and writes it as PNG. Returns false and sets `error` when the image cannot be written.
bool save_screenshot(MainWindow& window, StudioView view, const QString& path, QString& error);

}  // namespace loom::gui
