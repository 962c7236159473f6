#pragma once
// Loom Studio's command line: files to open, a model and plan for the plan viewer, and the
// headless screenshot mode.
#include <optional>

#include <QCoreApplication>
#include <QStringList>

#include "loom/gui/main_window.hpp"

namespace loom::gui {

struct StudioOptions {
  QStringList files;
  QString model;
  QString plan;
  QStringList specs;               // spec files or directories in place of the bundled specs/
  QString screenshot;              // write the window to this PNG and exit
  std::optional<StudioView> view;  // the view shown first
};

// Parses the application's arguments; --help and --version print and exit. Returns nothing and sets
// `error` for bad arguments.
std::optional<StudioOptions> parse_studio_options(const QStringList& arguments, QString& error);

// "editor", "rules" or "plan".
std::optional<StudioView> view_from_name(const QString& name);

}  // namespace loom::gui
