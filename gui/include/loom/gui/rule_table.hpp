#pragma once
// The rules of a library as a table (id, operators, category, status, size, rule text), and the
// filter over it: operator or id text, category, verification status.
#include <vector>

#include <QAbstractTableModel>
#include <QSortFilterProxyModel>

#include "loom/pcg/rule.hpp"

namespace loom::gui {

// Column order of RuleTableModel.
enum RuleColumn { kRuleId, kRuleOps, kRuleCategory, kRuleStatus, kRuleSize, kRuleText, kRuleColumnCount };

// "proved", "refuted", "unknown", or "unverified" for a rule without a verification.
QString rule_status(const pcg::Rule& rule);
// The distinct operators of both sides (graph inputs left out), sorted.
QStringList rule_operators(const pcg::Rule& rule);
// Operators on the left plus operators on the right.
int rule_size(const pcg::Rule& rule);

class RuleTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  using QAbstractTableModel::QAbstractTableModel;

  void set_rules(const std::vector<pcg::Rule>* rules);  // not owned; null: no rules
  void rules_changed(int first, int last);              // rows whose verification changed

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  const std::vector<pcg::Rule>* rules_ = nullptr;
};

class RuleFilter : public QSortFilterProxyModel {
  Q_OBJECT

 public:
  using QSortFilterProxyModel::QSortFilterProxyModel;

  void set_text(const QString& text);          // matched against the id and the operators
  void set_category(const QString& category);  // empty: any
  void set_status(const QString& status);      // empty: any

 protected:
  bool filterAcceptsRow(int row, const QModelIndex& parent) const override;

 private:
  QString text_, category_, status_;
};

}  // namespace loom::gui
