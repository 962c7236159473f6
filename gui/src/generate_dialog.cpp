#include "loom/gui/generate_dialog.hpp"

#include <thread>

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>

#include "loom/pcg/diagnostic.hpp"

namespace loom::gui {
namespace {

QString join(const std::vector<std::string>& items) {
  QStringList out;
  for (const auto& i : items) out << QString::fromStdString(i);
  return out.join(", ");
}

}  // namespace

std::vector<std::string> split_list(const QString& text) {
  std::vector<std::string> out;
  for (const QString& item : text.split(',', Qt::SkipEmptyParts))
    if (!item.trimmed().isEmpty()) out.push_back(item.trimmed().toStdString());
  return out;
}

GenerateDialog::GenerateDialog(const std::vector<std::string>& ops, const std::vector<std::string>& parallel, QWidget* parent)
    : QDialog(parent),
      ops_(new QLineEdit(join(ops))),
      parallel_(new QLineEdit(join(parallel))),
      degrees_(new QLineEdit("2")),
      inputs_(new QLineEdit),
      max_ops_(new QSpinBox),
      prune_implied_(new QCheckBox("drop rules implied by smaller ones (--prune-implied)")) {
  setWindowTitle("Generate rules");
  max_ops_->setRange(1, 4);
  max_ops_->setValue(2);
  prune_implied_->setChecked(true);
  inputs_->setPlaceholderText("default: x, y: [2d, 3d], w: [3d, 5d], z: [2d, 3d] {V: d}, t: [2d, 3d] {D: [1, d]}");
  auto* form = new QFormLayout(this);
  form->addRow("Compute ops", ops_);
  form->addRow("Parallel forms", parallel_);
  form->addRow("Operators per side", max_ops_);
  form->addRow("Degrees", degrees_);
  form->addRow("Graph inputs", inputs_);
  form->addRow(prune_implied_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  buttons->button(QDialogButtonBox::Ok)->setText("Generate");
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  form->addRow(buttons);
  resize(620, sizeHint().height());
}

superopt::GeneratorOptions GenerateDialog::options() const {
  superopt::GeneratorOptions o;
  o.ops = split_list(ops_->text());
  o.parallel = split_list(parallel_->text());
  o.max_ops = max_ops_->value();
  o.degrees.clear();
  for (const std::string& d : split_list(degrees_->text())) {
    bool ok = false;
    const qlonglong v = QString::fromStdString(d).toLongLong(&ok);
    if (!ok) throw LoomError("degrees: '" + d + "' is not an integer");
    o.degrees.push_back(v);
  }
  if (o.degrees.empty()) throw LoomError("degrees: give at least one");
  if (!inputs_->text().trimmed().isEmpty()) o.inputs = superopt::parse_inputs(inputs_->text().toStdString(), "graph inputs");
  o.prune_implied = prune_implied_->isChecked();
  o.jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return o;
}

}  // namespace loom::gui
