#pragma once
// The settings of `loom generate` that matter for a new operator: which ops and parallel forms to
// enumerate, how many operators per side, the degrees and the graph inputs.
#include <QDialog>

#include "loom/superopt/options.hpp"

class QCheckBox;
class QLineEdit;
class QSpinBox;

namespace loom::gui {

class GenerateDialog : public QDialog {
  Q_OBJECT

 public:
  GenerateDialog(const std::vector<std::string>& ops, const std::vector<std::string>& parallel, QWidget* parent = nullptr);

  // The options as entered; throws LoomError for a degree that is not an integer or inputs that do not parse.
  superopt::GeneratorOptions options() const;

 private:
  QLineEdit* ops_;
  QLineEdit* parallel_;
  QLineEdit* degrees_;
  QLineEdit* inputs_;
  QSpinBox* max_ops_;
  QCheckBox* prune_implied_;
};

// Comma-separated items, trimmed, empty ones dropped.
std::vector<std::string> split_list(const QString& text);

}  // namespace loom::gui
