// The forward pass of FlexFlow's task graph: a compute task for every task of every operator on
// its device, the messages that bring each input piece there, the layout changes' copies, moves
// and sums, and the loss.
#include <map>
#include <optional>

#include "loom/pcg/collective_groups.hpp"
#include "loom/pcg/known_collectives.hpp"
#include "loom/pcg/piece_moves.hpp"
#include "loom/pcg/task_layout.hpp"
#include "loom/search/output_loss.hpp"
#include "loom/search/reshard.hpp"
#include "task_graph_plan.hpp"

namespace loom::search {
namespace {

// A box moved within a device is read out of its piece into a buffer and added into the new
// piece: five passes over its bytes.
constexpr double kLocalMovePasses = 5;
// A piece of a graph input that is not a whole replica is copied out of the whole value each
// iteration: read and written once. Backward, a weight piece's gradient is copied out of the
// consumer's gradient and added into the whole weight's gradient, which starts from zeros on each
// device: five passes over the piece, one over the weight.
constexpr double kInputPiecePasses = 2;
constexpr double kWeightPieceGradientPasses = 5;
// After the forward pass each device takes the loss of its pieces of the output and its gradient
// (CostModel::loss_piece). Backward, each piece takes its gradient: about six passes over it.
constexpr double kLossGradientPasses = 6;

class ForwardPass {
 public:
  ForwardPass(const PlanLayout& plan, TaskGraph& out)
      : plan_(plan), graph_(plan.graph()), model_(plan.model()), machine_(plan.machine()), out_(out), holders_(graph_.size()) {}

  WeightReaders run(RunWork run_work) {
    for (const pcg::Node& n : graph_.nodes()) forward(n);
    if (run_work != RunWork::LeftOut) take_loss(run_work == RunWork::Included);
    return std::move(weights_);
  }

 private:
  // Tasks that must finish before piece `task` of a port is available, and where it is.
  struct Holder {
    int device = 0;
    std::vector<int> tasks;
    int weight = -1;  // a piece of this weight node, resident on the device
  };

  int add(SimTask t) { return add_task(out_, std::move(t)); }

  // The tasks after which `bytes` of a piece held as `from` is on `device`.
  std::vector<int> deliver(const Holder& from, int device, double bytes, const pcg::Node& n, std::int64_t index) {
    if (from.device == device || bytes <= 0) return from.tasks;
    SimTask t;
    t.kind = TaskKind::Communication;
    t.node = n.id;
    t.index = index;
    t.device = from.device;
    t.peer = device;
    t.bytes = bytes;
    t.seconds = machine_.link_between(from.device, device).transfer_seconds(bytes);
    t.deps = from.tasks;
    t.label = task_label(n, index) + " " + std::to_string(from.device) + "->" + std::to_string(device);
    hold_devices(machine_, t, {from.device, device});
    meet_in(machine_, t, {device});
    return {add(std::move(t))};
  }

  void forward(const pcg::Node& n) {
    const pcg::MachineView view = plan_.view_of(n);
    auto& held = holders_[n.id.index()];
    held.resize(n.output_shapes.size());
    if (n.is_graph_input()) {
      held_locally(held[0], view, n.op == pcg::kWeightOp ? n.id : pcg::kNoNode);
      return;
    }
    if (plan_.is_layout_change(n)) {
      if (plan_.fused_away(n) || plan_.is_unread_output(n)) return;
      if (plan_.loads_its_pieces(n)) {
        const pcg::Node& source = graph_.node(plan_.source_of(n).node);
        held_locally(held[0], view, source.op == pcg::kWeightOp ? source.id : pcg::kNoNode);
        copy_input_pieces(n, view, held[0]);
      } else {
        move_data(n, view);
      }
      dispatch_layout_change(n, held[0]);
      return;
    }
    const TaskEstimate est = model_.compute(graph_, n);
    for (std::size_t t = 0; t < view.tasks(); ++t) {
      SimTask task;
      task.node = n.id;
      task.index = static_cast<std::int64_t>(t);
      task.device = view.devices[t];
      task.seconds = est.seconds;
      task.backward_seconds = plan_.runs_backward(n) ? est.backward_seconds : 0;
      task.label = task_label(n, t);
      std::vector<int> weights_read;
      for (pcg::PortRef in : n.inputs) {
        const Holder& from = holders_[in.node.index()][static_cast<std::size_t>(in.port)][t];
        if (from.weight >= 0) weights_read.push_back(from.weight);
        // A graph input is loaded where it is read, as each process reads its feed.
        const double bytes =
            graph_.node(in.node).is_graph_input() ? 0 : static_cast<double>(pcg::piece_elements(graph_.shape_of(in))) * kBytesPerElement;
        for (int d : deliver(from, task.device, bytes, n, task.index)) task.deps.push_back(d);
      }
      const int id = add(std::move(task));
      for (int w : weights_read) weights_[w][view.devices[t]].push_back(id);
      for (auto& port : held) port.push_back({view.devices[t], {id}});
    }
  }

  // The executor steps through a layout change as through an operator, on each device holding
  // its pieces: the device's dispatch overhead, forward and backward, after the change's own work
  // and before its readers (nothing where the machine gives no dispatch overhead).
  void dispatch_layout_change(const pcg::Node& n, std::vector<Holder>& pieces) {
    const double dispatch = machine_.device.dispatch_overhead;
    if (dispatch <= 0) return;
    std::map<int, std::vector<int>> work_on;  // device -> the change's tasks there
    for (const Holder& piece : pieces) work_on[piece.device].insert(work_on[piece.device].end(), piece.tasks.begin(), piece.tasks.end());
    const int weight = pieces.empty() ? -1 : pieces.front().weight;  // the pieces of one value
    std::map<int, int> task_on;                                      // device -> its dispatch task
    for (auto& [device, work] : work_on) {
      SimTask t;
      t.node = n.id;
      t.device = device;
      t.seconds = dispatch;
      t.backward_seconds = plan_.runs_backward(n) ? dispatch : 0;
      t.deps = std::move(work);
      t.label = node_label(n) + " dispatch on " + std::to_string(device);
      task_on[device] = add(std::move(t));
      // Backward, a weight's gradient is complete once the change has handed it back.
      if (weight >= 0) weights_[weight][device].push_back(task_on[device]);
    }
    for (Holder& piece : pieces) piece.tasks = {task_on.at(piece.device)};
  }

  // Pieces that are on the devices of `view` from the start of the iteration.
  static void held_locally(std::vector<Holder>& port, const pcg::MachineView& view, int weight) {
    for (std::size_t t = 0; t < view.tasks(); ++t) port.push_back({view.devices[t], {}, weight});
  }

  // The loss, as a training run takes it: on every device, of its pieces of the (first) graph
  // output, once every piece is computed, since the processes sum their shares of it (an
  // allreduce of one number, charged to each device's loss). Its
  // mirror in the backward pass, which every gradient of the output waits for, gives each piece
  // its gradient. Unless `summed`, only the devices holding pieces of the output take it, and
  // meet no one: a pipeline's micro-batches sum their losses at the end of the step. Cross-entropy
  // over logits whose classes are split first has the devices holding the same rows gather those
  // rows' statistics (row_statistics_groups), which they meet in.
  void take_loss(bool summed) {
    if (graph_.outputs().empty()) return;
    pcg::PortRef out = graph_.outputs().front();
    const pcg::Node& node = graph_.node(out.node);
    if (node.is_graph_input()) return;
    if (plan_.is_layout_change(node) && plan_.is_unread_output(node)) out = plan_.source_of(node);
    const pcg::ParallelShape& shape = graph_.shape_of(out);
    const std::vector<Holder>& pieces = holders_[out.node.index()][static_cast<std::size_t>(out.port)];
    std::vector<int> deps;
    std::map<int, std::vector<int>> deps_on;  // by device: the tasks of its own pieces
    std::map<int, int> pieces_on;             // by device: how many pieces of the output it takes the loss of
    for (std::size_t t = 0; t < pieces.size(); ++t) {
      deps.insert(deps.end(), pieces[t].tasks.begin(), pieces[t].tasks.end());
      if (pcg::task_piece(shape, static_cast<std::int64_t>(t)).replica == 0) {
        ++pieces_on[pieces[t].device];
        std::vector<int>& mine = deps_on[pieces[t].device];
        mine.insert(mine.end(), pieces[t].tasks.begin(), pieces[t].tasks.end());
      }
    }
    // In a step of one batch the processes then sum their shares of the loss, a number each,
    // before any backward; a pipeline's sum follows its passes (sum_losses in pipeline.cpp).
    std::set<int> devices;
    if (summed) {
      devices = plan_.devices_in_use();
    } else {
      for (const auto& [d, count] : pieces_on) devices.insert(d);
    }
    const double shares_summed = summed ? loss_shares_summed_seconds(machine_, devices) : 0;
    // Per device, the time it gathers rows' statistics in and the devices it meets there.
    std::map<int, double> rows_gathered;
    std::map<int, std::set<int>> rows_shared_with;
    const bool probabilities = output_is_probabilities(model_.library(), graph_);
    // Every device holding pieces takes their rows' statistics where the rows are shared, as the
    // runtime does, whether or not another device holds the rows' other classes.
    const bool rows_shared = shares_row_statistics(model_.loss(), shape, probabilities);
    if (rows_shared) {
      std::vector<int> device_of_task;
      for (const Holder& piece : pieces) device_of_task.push_back(piece.device);
      for (const RowStatisticsGroup& group : row_statistics_groups(shape, device_of_task)) {
        const auto k = static_cast<int>(group.devices.size());
        const double bytes = static_cast<double>(k * group.rows.elements() * kRowStatistics) * sizeof(double);
        const double seconds =
            collective_seconds(pcg::Collective::all_gather, k, machine_.link_between(group.devices.front(), group.devices.back()), bytes);
        for (int d : group.devices) {
          rows_gathered[d] += seconds;
          rows_shared_with[d].insert(group.devices.begin(), group.devices.end());
        }
      }
    }
    // Every piece is alike: its loss is costed once.
    const double piece_seconds = model_.loss_piece(pcg::piece_region(shape, 0).extent(), shape.dims, probabilities, rows_shared).seconds;
    const double piece_bytes = static_cast<double>(pcg::piece_elements(shape)) * kBytesPerElement;
    for (int d : devices) {
      const int own_pieces = pieces_on[d];
      SimTask loss;
      loss.node = node.id;
      loss.device = d;
      const auto shared_with = rows_shared_with.find(d);
      loss.seconds = own_pieces * piece_seconds + shares_summed + rows_gathered[d];
      loss.backward_seconds = kLossGradientPasses * own_pieces * piece_bytes / machine_.device.memory_bandwidth;
      if (summed) {
        loss.deps = deps;
        loss.meets = others_than(std::vector<int>(devices.begin(), devices.end()), d);
      } else if (shared_with != rows_shared_with.end()) {
        for (int peer : shared_with->second) loss.deps.insert(loss.deps.end(), deps_on[peer].begin(), deps_on[peer].end());
        loss.meets = others_than(std::vector<int>(shared_with->second.begin(), shared_with->second.end()), d);
      } else {
        loss.deps = deps_on[d];
      }
      loss.label = "loss on " + std::to_string(d);
      add(std::move(loss));
    }
  }

  // Layout change n's work per piece, where measured (CostModel::measured_layout_change).
  std::optional<TaskEstimate> measured_change(const pcg::Node& n) const {
    const pcg::PortRef source = plan_.source_of(n);
    return model_.measured_layout_change(LayoutChangeTask{n.op, n.attrs, graph_.shape_of(source), n.output_shapes.at(0),
                                                          plan_.loads_its_pieces(n), plan_.runs_backward(n), source != n.inputs.at(0)});
  }

  // The copies of graph input pieces that are not whole replicas, each the dependency of its
  // piece's holder; a weight's copies are among the tasks its gradient sum waits for.
  void copy_input_pieces(const pcg::Node& n, const pcg::MachineView& view, std::vector<Holder>& held) {
    const pcg::ParallelShape& out = n.output_shapes[0];
    const std::optional<TaskEstimate> measured = measured_change(n);
    if (out.R == out.tasks() && !measured) return;  // every piece is the whole value, read where it is
    const pcg::Node& source = graph_.node(plan_.source_of(n).node);
    const bool weight = model_.trains(graph_, source);
    const double piece_bytes = static_cast<double>(pcg::piece_elements(out)) * kBytesPerElement;
    const double whole_bytes = static_cast<double>(pcg::whole_region(out.dims).elements()) * kBytesPerElement;
    std::set<int> zeroed;  // devices whose whole gradient of the weight is already counted
    for (std::size_t t = 0; t < view.tasks(); ++t) {
      const int device = view.devices[t];
      SimTask copy;
      copy.node = n.id;
      copy.index = static_cast<std::int64_t>(t);
      copy.device = device;
      copy.seconds = measured ? measured->seconds : kInputPiecePasses * piece_bytes / machine_.device.memory_bandwidth;
      if (weight)
        copy.backward_seconds = measured ? measured->backward_seconds
                                         : (kWeightPieceGradientPasses * piece_bytes + (zeroed.insert(device).second ? whole_bytes : 0)) /
                                               machine_.device.memory_bandwidth;
      copy.label = task_label(n, t) + " piece copy";
      const int id = add(std::move(copy));
      held[t].tasks = {id};
      if (weight) weights_[source.id][device].push_back(id);
    }
  }

  // A parallelization operator or fused form moves its input's pieces as pcg::piece_moves says;
  // where partial sums are summed, the receiving device adds them up.
  void move_data(const pcg::Node& n, const pcg::MachineView& view) {
    const pcg::PortRef source_port = plan_.source_of(n);
    const pcg::ParallelShape& in = graph_.shape_of(source_port);
    const pcg::ParallelShape& out = n.output_shapes[0];
    const auto& sources = holders_[source_port.node.index()][static_cast<std::size_t>(source_port.port)];
    auto& held = holders_[n.id.index()][0];
    pcg::MachineView from;
    for (const Holder& h : sources) from.devices.push_back(h.device);
    const RvdSearch::LaidOutChange& change = model_.moves().laid_out(in, from, out, view);
    const std::vector<pcg::PieceMove>& moves = change.moves;
    const std::optional<TaskEstimate> measured = measured_change(n);
    if (change.collective) return run_collective(n, *change.collective, in, out, sources, measured, held);
    auto move = moves.begin();
    for (std::int64_t t = 0; t < out.tasks(); ++t) {
      const int device = view.devices[static_cast<std::size_t>(t)];
      std::vector<int> deps, local_deps;
      double local_bytes = 0;
      for (; move != moves.end() && move->to == t; ++move) {
        const Holder& source = sources[static_cast<std::size_t>(move->from)];
        const double bytes = static_cast<double>(move->region.elements()) * kBytesPerElement;
        if (source.device == device && in.V == out.V) {
          local_bytes += bytes;
          local_deps.insert(local_deps.end(), source.tasks.begin(), source.tasks.end());
          continue;
        }
        for (int d : deliver(source, device, bytes, n, t)) deps.push_back(d);
      }
      if (measured) {
        // The piece's whole measured work: its local copies, its share of packing and
        // unpacking, and adding up partial sums.
        SimTask work;
        work.node = n.id;
        work.index = t;
        work.device = device;
        work.seconds = measured->seconds;
        work.backward_seconds = measured->backward_seconds;
        work.deps = std::move(local_deps);
        work.deps.insert(work.deps.end(), deps.begin(), deps.end());
        work.label = task_label(n, t) + " layout work";
        held.push_back({device, {add(std::move(work))}});
        continue;
      }
      if (local_bytes > 0) {
        SimTask copy;
        copy.node = n.id;
        copy.index = t;
        copy.device = device;
        copy.seconds = copy.backward_seconds = kLocalMovePasses * local_bytes / machine_.device.memory_bandwidth;
        copy.deps = std::move(local_deps);
        copy.label = task_label(n, t) + " local copy";
        deps.push_back(add(std::move(copy)));
      }
      if (in.V > out.V) {
        SimTask sum;
        sum.node = n.id;
        sum.index = t;
        sum.device = device;
        // Reads each of the partial pieces and writes their sum.
        const double bytes = static_cast<double>((in.V / out.V + 1) * pcg::piece_elements(out)) * kBytesPerElement;
        // Backward, the gradient of the sum goes to each partial piece: as many bytes again.
        sum.seconds = sum.backward_seconds = bytes / machine_.device.memory_bandwidth + machine_.device.kernel_overhead;
        sum.deps = std::move(deps);
        sum.label = task_label(n, t) + " sum";
        deps = {add(std::move(sum))};
      }
      held.push_back({device, std::move(deps)});
    }
  }

  // A change whose pieces move as one collective within groups of devices runs as that
  // collective, as the runtime runs it: a ring among each group's devices, after every piece of
  // the group is made, costed as the machine mapping costs it (reshard.hpp). Where the profile
  // database has the change's work per piece (packing and placing blocks), each piece's work
  // follows its collective.
  void run_collective(const pcg::Node& n, const pcg::CollectiveGroups& collective, const pcg::ParallelShape& in,
                      const pcg::ParallelShape& out, const std::vector<Holder>& sources, const std::optional<TaskEstimate>& measured,
                      std::vector<Holder>& held) {
    held.assign(static_cast<std::size_t>(out.tasks()), Holder{});
    for (const pcg::CollectiveGroup& g : collective.groups) {
      const std::size_t k = g.ranks.size();
      std::vector<int> deps, ring;
      for (std::int64_t f : g.from) {
        const Holder& source = sources[static_cast<std::size_t>(f)];
        deps.insert(deps.end(), source.tasks.begin(), source.tasks.end());
      }
      if (k > 1) {
        const double seconds = collective_seconds(collective, g, in, out, machine_);
        const double box_bytes = collective_box_bytes(collective.kind, in, out);
        const double steps = collective.kind == pcg::Collective::allreduce ? 2 : 1;
        for (std::size_t i = 0; i < k; ++i) {
          SimTask t;
          t.kind = TaskKind::Communication;
          t.node = n.id;
          t.index = g.to[i];
          t.device = g.ranks[i];
          t.peer = g.ranks[(i + 1) % k];
          t.bytes = steps * static_cast<double>(k - 1) / static_cast<double>(k) * box_bytes;
          t.seconds = seconds;
          t.deps = deps;
          t.label = node_label(n) + " " + std::string(pcg::collective_name(collective.kind)) + " " + std::to_string(t.device) + "->" +
                    std::to_string(t.peer);
          hold_devices(machine_, t, {t.device});
          meet_in(machine_, t, others_than(g.ranks, t.device));
          ring.push_back(add(std::move(t)));
        }
        deps = ring;
      }
      for (std::size_t i = 0; i < k; ++i) {
        std::vector<int> after = deps;
        if (measured) {
          SimTask work;
          work.node = n.id;
          work.index = g.to[i];
          work.device = g.ranks[i];
          work.seconds = measured->seconds;
          work.backward_seconds = measured->backward_seconds;
          work.deps = deps;
          work.label = task_label(n, g.to[i]) + " layout work";
          after = {add(std::move(work))};
        }
        held[static_cast<std::size_t>(g.to[i])] = {g.ranks[i], std::move(after)};
      }
    }
  }

  const PlanLayout& plan_;
  const pcg::Graph& graph_;
  const CostModel& model_;
  const Machine& machine_;
  TaskGraph& out_;
  std::vector<std::vector<std::vector<Holder>>> holders_;  // node -> port -> task
  WeightReaders weights_;
};

}  // namespace

WeightReaders add_forward_tasks(const PlanLayout& plan, RunWork run_work, TaskGraph& out) { return ForwardPass(plan, out).run(run_work); }

}  // namespace loom::search
