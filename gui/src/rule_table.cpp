#include "loom/gui/rule_table.hpp"

#include <set>

#include <QBrush>
#include <QColor>

namespace loom::gui {
namespace {

int operator_count(const pcg::Graph& g) {
  int n = 0;
  for (const pcg::Node& node : g.nodes()) n += !node.is_graph_input();
  return n;
}

QColor status_color(const QString& status) {
  if (status == "proved") return {0x1a, 0x7f, 0x37};
  if (status == "refuted") return {0xb0, 0x00, 0x20};
  if (status == "unknown") return {0xb3, 0x6b, 0x00};
  return {0x77, 0x77, 0x77};
}

}  // namespace

QString rule_status(const pcg::Rule& rule) {
  return rule.verification ? QString::fromStdString(pcg::status_name(rule.verification->status)) : QString("unverified");
}

QStringList rule_operators(const pcg::Rule& rule) {
  std::set<std::string> ops;
  for (const pcg::Graph* g : {&rule.lhs, &rule.rhs})
    for (const pcg::Node& n : g->nodes())
      if (!n.is_graph_input()) ops.insert(n.op);
  QStringList out;
  for (const auto& op : ops) out << QString::fromStdString(op);
  return out;
}

int rule_size(const pcg::Rule& rule) { return operator_count(rule.lhs) + operator_count(rule.rhs); }

void RuleTableModel::set_rules(const std::vector<pcg::Rule>* rules) {
  beginResetModel();
  rules_ = rules;
  endResetModel();
}

void RuleTableModel::rules_changed(int first, int last) { emit dataChanged(index(first, 0), index(last, kRuleColumnCount - 1)); }

int RuleTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() || !rules_ ? 0 : static_cast<int>(rules_->size()); }

int RuleTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kRuleColumnCount; }

QVariant RuleTableModel::data(const QModelIndex& index, int role) const {
  if (!rules_ || !index.isValid()) return {};
  const pcg::Rule& rule = (*rules_)[static_cast<std::size_t>(index.row())];
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (index.column()) {
      case kRuleId: return QString::fromStdString(rule.id);
      case kRuleOps: return rule_operators(rule).join(", ");
      case kRuleCategory: return QString::fromStdString(pcg::category_name(rule.category));
      case kRuleStatus: return rule_status(rule);
      case kRuleSize: return rule_size(rule);
      case kRuleText: return QString::fromStdString(rule.text);
      default: return {};
    }
  }
  if (role == Qt::ForegroundRole && index.column() == kRuleStatus) return QBrush(status_color(rule_status(rule)));
  if (role == Qt::TextAlignmentRole && index.column() == kRuleSize) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant RuleTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"rule", "operators", "category", "status", "size", "rule text"};
  return section >= 0 && section < kRuleColumnCount ? QString(kNames[section]) : QVariant();
}

void RuleFilter::set_text(const QString& text) {
  text_ = text.trimmed();
  invalidateFilter();
}

void RuleFilter::set_category(const QString& category) {
  category_ = category;
  invalidateFilter();
}

void RuleFilter::set_status(const QString& status) {
  status_ = status;
  invalidateFilter();
}

bool RuleFilter::filterAcceptsRow(int row, const QModelIndex& parent) const {
  const QAbstractItemModel* m = sourceModel();
  auto cell = [&](int column) { return m->data(m->index(row, column, parent), Qt::DisplayRole).toString(); };
  if (!category_.isEmpty() && cell(kRuleCategory) != category_) return false;
  if (!status_.isEmpty() && cell(kRuleStatus) != status_) return false;
  if (text_.isEmpty()) return true;
  // Every word must name an operator of the rule or be part of its id.
  const QStringList ops = cell(kRuleOps).split(", ");
  const QString id = cell(kRuleId);
  for (const QString& word : text_.split(' ', Qt::SkipEmptyParts))
    if (!ops.contains(word) && !id.contains(word, Qt::CaseInsensitive)) return false;
  return true;
}

}  // namespace loom::gui
