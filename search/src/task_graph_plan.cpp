#include "task_graph_plan.hpp"

#include <algorithm>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/layout_fusion.hpp"
#include "loom/pcg/task_layout.hpp"
#include "loom/search/checked_view.hpp"

namespace loom::search {

namespace {

bool runs_as_layout_change(const pcg::Node& n, const CostModel& model) {
  return n.inputs.size() == 1 && n.output_shapes.size() == 1 && !model.is_compute(n);
}

}  // namespace

pcg::LayoutChangeSources layout_changes_as_run(const pcg::Graph& graph, const CostModel& model) {
  const RvdSearch& moves = model.moves();
  return pcg::fuse_layout_changes(
      graph, [&model](const pcg::Node& n) { return runs_as_layout_change(n, model); },
      [&model](const pcg::Node& n) { return checked_view(n, model.machine()); }, true,
      [&moves](const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
               const pcg::MachineView& to_view) { return moves.laid_out(from, from_view, to, to_view).collective.has_value(); });
}

PlanLayout::PlanLayout(const pcg::Graph& graph, const CostModel& model)
    : graph_(graph),
      model_(model),
      machine_(model.machine()),
      takes_gradient_(model.gradient_values(graph)),
      forward_only_(cut_off_from_gradients(graph, model.detached_inputs())) {
  const auto layout_change = [this](const pcg::Node& n) { return is_layout_change(n); };
  const auto view = [this](const pcg::Node& n) { return view_of(n); };
  const RvdSearch& moves = model_.moves();
  pcg::LayoutChangeSources fused = layout_changes_as_run(graph_, model_);
  reads_ = pcg::input_reads(
      graph_, fused, layout_change, view, [this](const pcg::Node& n) { return model_.trains(graph_, n); },
      [&moves](const pcg::ParallelShape& from, const pcg::MachineView& from_view, const pcg::ParallelShape& to,
               const pcg::MachineView& to_view) -> const std::vector<pcg::PieceMove>& {
        return moves.laid_out(from, from_view, to, to_view).moves;
      });
  sources_ = std::move(fused.source);
  fused_away_ = std::move(fused.fused_away);
}

pcg::MachineView PlanLayout::view_of(const pcg::Node& n) const { return checked_view(n, machine_); }

bool PlanLayout::is_layout_change(const pcg::Node& n) const { return runs_as_layout_change(n, model_); }

bool PlanLayout::loads_its_pieces(const pcg::Node& n) const {
  const pcg::Node& source = graph_.node(source_of(n).node);
  return source.op == pcg::kInputOp || source.op == pcg::kWeightOp;
}

bool PlanLayout::is_unread_output(const pcg::Node& n) const { return pcg::is_unread_output(graph_, n.id, source_of(n)); }

std::set<int> PlanLayout::devices_in_use() const {
  std::set<int> devices;
  for (const pcg::Node& n : graph_.nodes())
    if (!n.is_graph_input())
      for (int d : view_of(n).devices) devices.insert(d);
  return devices;
}

std::vector<pcg::GradientShare> PlanLayout::shares_of(pcg::NodeId weight, const pcg::InputReads& reads) const {
  return reads.sums(pcg::whole_region(graph_.node(weight).output_shapes[0].dims), machine_.devices());
}

}  // namespace loom::search
