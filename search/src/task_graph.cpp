#include "loom/search/task_graph.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/gradient_sums.hpp"
#include "loom/pcg/layout_fusion.hpp"
#include "loom/pcg/piece_moves.hpp"
#include "loom/pcg/task_layout.hpp"

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
// Gradient boxes summed among devices are packed into one buffer and unpacked after the sum: six
// passes over their bytes.
constexpr double kGradientPackPasses = 6;
// After the forward pass each device takes the loss of its pieces of the output and its gradient
// (reading them and the target, writing the gradient): about three passes over them. Backward,
// each piece takes its gradient: about six passes.
constexpr double kLossPasses = 3;
constexpr double kLossGradientPasses = 6;

class Builder {
 public:
  Builder(const pcg::Graph& graph, const CostModel& model, RunWork run_work)
      : graph_(graph), model_(model), machine_(model.machine()), run_work_(run_work) {
    out_.devices = machine_.devices();
    holders_.resize(graph.size());
    consumed_.resize(graph.size(), false);
    for (const pcg::Node& n : graph.nodes())
      for (pcg::PortRef in : n.inputs) consumed_[static_cast<std::size_t>(in.node)] = true;
  }

  std::vector<pcg::PortRef> layout_change_sources() {
    fuse_chains();
    return sources_;
  }

  std::map<int, std::map<int, std::vector<pcg::Region>>> weight_update_boxes() {
    fuse_chains();
    std::map<int, std::map<int, std::vector<pcg::Region>>> out;
    for (const auto& [weight, reads] : reads_)
      for (const pcg::GradientShare& share : shares_of(weight, reads))
        for (int d : share.devices) out[weight][d].push_back(share.box);
    return out;
  }

  TaskGraph build() {
    fuse_chains();
    for (const pcg::Node& n : graph_.nodes()) forward(n);
    if (run_work_ == RunWork::Included) take_loss();
    synchronize_weights(mirror_backward());
    return std::move(out_);
  }

 private:
  // Tasks that must finish before piece `task` of a port is available, and where it is.
  struct Holder {
    int device = 0;
    std::vector<int> tasks;
    int weight = -1;  // a piece of this weight node, resident on the device
  };
  // The forward tasks that read a weight, by device.
  struct WeightReaders {
    std::map<int, std::vector<int>> tasks;
  };

  pcg::MachineView view_of(const pcg::Node& n) const {
    pcg::MachineView view = n.view ? *n.view : pcg::MachineView::contiguous(0, n.tasks());
    for (int d : view.devices)
      if (d < 0 || d >= machine_.devices())
        throw LoomError(n.describe() + ": its machine view uses device " + std::to_string(d) + ", but " + machine_.name + " has " +
                        std::to_string(machine_.devices()) + " devices");
    return view;
  }

  // Devices that do not overlap communication wait in it: the task holds them too.
  void hold_devices(SimTask& t, std::vector<int> devices) const {
    if (!machine_.device.overlaps_communication) t.holds = std::move(devices);
  }

  int add(SimTask t) {
    out_.tasks.push_back(std::move(t));
    return static_cast<int>(out_.tasks.size()) - 1;
  }

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
    t.label = n.op + "#" + std::to_string(n.id) + "[" + std::to_string(index) + "] " + std::to_string(from.device) + "->" +
              std::to_string(device);
    hold_devices(t, {from.device, device});
    return {add(std::move(t))};
  }

  void forward(const pcg::Node& n) {
    const pcg::MachineView view = view_of(n);
    auto& held = holders_[static_cast<std::size_t>(n.id)];
    held.resize(n.output_shapes.size());
    if (n.is_graph_input()) {
      held_locally(held[0], view, n.op == pcg::kWeightOp ? n.id : -1);
      return;
    }
    if (is_layout_change(n)) {
      if (fused_away_[static_cast<std::size_t>(n.id)] || is_unread_output(n)) return;
      if (loads_its_pieces(n)) {
        const pcg::Node& source = graph_.node(source_of(n).node);
        held_locally(held[0], view, source.op == pcg::kWeightOp ? source.id : -1);
        copy_input_pieces(n, view, held[0]);
      } else {
        move_data(n, view);
      }
      return;
    }
    const TaskEstimate est = model_.compute(graph_, n);
    for (std::size_t t = 0; t < view.tasks(); ++t) {
      SimTask task;
      task.node = n.id;
      task.index = static_cast<std::int64_t>(t);
      task.device = view.devices[t];
      task.seconds = est.seconds;
      task.backward_seconds = est.backward_seconds;
      task.label = n.op + "#" + std::to_string(n.id) + "[" + std::to_string(t) + "]";
      std::vector<int> weights_read;
      for (pcg::PortRef in : n.inputs) {
        const Holder& from = holders_[static_cast<std::size_t>(in.node)][static_cast<std::size_t>(in.port)][t];
        if (from.weight >= 0) weights_read.push_back(from.weight);
        const double bytes = static_cast<double>(pcg::piece_elements(graph_.shape_of(in))) * kBytesPerElement;
        for (int d : deliver(from, task.device, bytes, n, task.index)) task.deps.push_back(d);
      }
      const int id = add(std::move(task));
      for (int w : weights_read) weights_[w].tasks[view.devices[t]].push_back(id);
      for (auto& port : held) port.push_back({view.devices[t], {id}});
    }
  }

  bool is_layout_change(const pcg::Node& n) const { return n.inputs.size() == 1 && n.output_shapes.size() == 1 && !model_.is_compute(n); }

  // The value a layout change moves from: its input, or the first input of the chain fused into it.
  pcg::PortRef source_of(const pcg::Node& n) const { return sources_[static_cast<std::size_t>(n.id)]; }

  // As the runtime runs them: which value each layout change moves from
  // (pcg/layout_fusion.hpp), and which devices read which box of each weight
  // (pcg/gradient_sums.hpp).
  void fuse_chains() {
    const auto layout_change = [this](const pcg::Node& n) { return is_layout_change(n); };
    const auto view = [this](const pcg::Node& n) { return view_of(n); };
    pcg::LayoutChangeSources fused = pcg::fuse_layout_changes(graph_, layout_change, view);
    reads_ = pcg::input_reads(graph_, fused, layout_change, view, [](const pcg::Node& n) { return n.op == pcg::kWeightOp; });
    sources_ = std::move(fused.source);
    fused_away_ = std::move(fused.fused_away);
  }

  // Pieces that are on the devices of `view` from the start of the iteration.
  static void held_locally(std::vector<Holder>& port, const pcg::MachineView& view, int weight) {
    for (std::size_t t = 0; t < view.tasks(); ++t) port.push_back({view.devices[t], {}, weight});
  }

  // The devices the graph's tasks run on: one process each in a training run.
  std::set<int> devices_in_use() const {
    std::set<int> devices;
    for (const pcg::Node& n : graph_.nodes())
      if (!n.is_graph_input())
        for (int d : view_of(n).devices) devices.insert(d);
    return devices;
  }

  // The loss, as a training run takes it: on every device, of its pieces of the (first) graph
  // output, once every piece is computed, since the processes sum their shares of it. Its
  // mirror in the backward pass, which every gradient of the output waits for, gives each piece
  // its gradient.
  void take_loss() {
    if (graph_.outputs().empty()) return;
    pcg::PortRef out = graph_.outputs().front();
    const pcg::Node& node = graph_.node(out.node);
    if (node.is_graph_input()) return;
    if (is_layout_change(node) && is_unread_output(node)) out = source_of(node);
    const pcg::ParallelShape& shape = graph_.shape_of(out);
    const std::vector<Holder>& pieces = holders_[static_cast<std::size_t>(out.node)][static_cast<std::size_t>(out.port)];
    std::vector<int> deps;
    std::map<int, double> piece_elements;  // by device: the elements of its pieces of the output
    for (std::size_t t = 0; t < pieces.size(); ++t) {
      deps.insert(deps.end(), pieces[t].tasks.begin(), pieces[t].tasks.end());
      if (pcg::task_piece(shape, static_cast<std::int64_t>(t)).replica == 0)
        piece_elements[pieces[t].device] += static_cast<double>(pcg::piece_elements(shape));
    }
    for (int d : devices_in_use()) {
      const double bytes = piece_elements[d] * kBytesPerElement;
      SimTask loss;
      loss.node = node.id;
      loss.device = d;
      loss.seconds = kLossPasses * bytes / machine_.device.memory_bandwidth;
      loss.backward_seconds = kLossGradientPasses * bytes / machine_.device.memory_bandwidth;
      loss.deps = deps;
      loss.label = "loss on " + std::to_string(d);
      add(std::move(loss));
    }
  }

  // A parallelization operator over a data input moves nothing: each device loads its own piece.
  // Nor does one over a weight: each device keeps its shard or replica from one iteration to the
  // next, and replicas are kept equal by summing their gradients (synchronize_weights).
  bool loads_its_pieces(const pcg::Node& n) const {
    const pcg::Node& source = graph_.node(source_of(n).node);
    return source.op == pcg::kInputOp || source.op == pcg::kWeightOp;
  }

  // The copies of graph input pieces that are not whole replicas, each the dependency of its
  // piece's holder; a weight's copies are among the tasks its gradient sum waits for.
  void copy_input_pieces(const pcg::Node& n, const pcg::MachineView& view, std::vector<Holder>& held) {
    const pcg::ParallelShape& out = n.output_shapes[0];
    const std::optional<TaskEstimate> measured = model_.measured_layout_change(graph_.shape_of(source_of(n)), out);
    if (out.R == out.tasks() && !measured) return;  // every piece is the whole value, read where it is
    const pcg::Node& source = graph_.node(source_of(n).node);
    const bool weight = source.op == pcg::kWeightOp;
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
      copy.label = n.op + "#" + std::to_string(n.id) + "[" + std::to_string(t) + "] piece copy";
      const int id = add(std::move(copy));
      held[t].tasks = {id};
      if (weight) weights_[source.id].tasks[device].push_back(id);
    }
  }

  // A parallelization operator producing only a graph output nobody reads moves nothing: the loss
  // is computed where its input's pieces are.
  bool is_unread_output(const pcg::Node& n) const {
    const auto& outputs = graph_.outputs();
    // Partial sums must still be added up before the loss can read them.
    if (graph_.shape_of(source_of(n)).V != n.output_shapes[0].V) return false;
    return !consumed_[static_cast<std::size_t>(n.id)] && std::find(outputs.begin(), outputs.end(), pcg::PortRef{n.id, 0}) != outputs.end();
  }

  // A parallelization operator or fused form moves its input's pieces as pcg::piece_moves says;
  // where partial sums are summed, the receiving device adds them up.
  void move_data(const pcg::Node& n, const pcg::MachineView& view) {
    const pcg::ParallelShape& in = graph_.shape_of(source_of(n));
    const pcg::ParallelShape& out = n.output_shapes[0];
    const auto& sources = holders_[static_cast<std::size_t>(source_of(n).node)][static_cast<std::size_t>(source_of(n).port)];
    auto& held = holders_[static_cast<std::size_t>(n.id)][0];
    pcg::MachineView from;
    for (const Holder& h : sources) from.devices.push_back(h.device);
    const std::vector<pcg::PieceMove> moves = pcg::piece_moves(in, from, out, view);
    const std::optional<TaskEstimate> measured = model_.measured_layout_change(in, out);
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
        work.label = n.op + "#" + std::to_string(n.id) + "[" + std::to_string(t) + "] layout work";
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
        copy.label = n.op + "#" + std::to_string(n.id) + "[" + std::to_string(t) + "] local copy";
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
        sum.label = n.op + "#" + std::to_string(n.id) + "[" + std::to_string(t) + "] sum";
        deps = {add(std::move(sum))};
      }
      held.push_back({device, std::move(deps)});
    }
  }

  // The backward pass: every forward task mirrored in reverse order. Returns each forward task's
  // mirror.
  std::vector<int> mirror_backward() {
    const int forward_count = static_cast<int>(out_.tasks.size());
    std::vector<std::vector<int>> dependents(static_cast<std::size_t>(forward_count));
    for (int i = 0; i < forward_count; ++i)
      for (int d : out_.tasks[static_cast<std::size_t>(i)].deps) dependents[static_cast<std::size_t>(d)].push_back(i);
    std::vector<int> mirror(static_cast<std::size_t>(forward_count), -1);
    for (int i = forward_count - 1; i >= 0; --i) {
      SimTask b = out_.tasks[static_cast<std::size_t>(i)];
      b.backward = true;
      if (b.kind == TaskKind::Compute)
        b.seconds = b.backward_seconds;
      else
        std::swap(b.device, b.peer);
      b.deps.clear();
      for (int j : dependents[static_cast<std::size_t>(i)]) b.deps.push_back(mirror[static_cast<std::size_t>(j)]);
      if (b.deps.empty()) b.deps.push_back(i);  // a sink: its gradient follows its own forward result
      b.label += " (backward)";
      mirror[static_cast<std::size_t>(i)] = add(std::move(b));
    }
    return mirror;
  }

  // The sums of a weight's gradient among the devices reading it (pcg/gradient_sums.hpp).
  std::vector<pcg::GradientShare> shares_of(int weight, const pcg::InputReads& reads) const {
    return reads.sums(pcg::whole_region(graph_.node(weight).output_shapes[0].dims), machine_.devices());
  }

  // As the runtime does it: the devices that read the same box of a weight sum their gradients of
  // it as soon as the backward pass has made them, overlapping the rest of the pass. A weight's
  // gradient is complete once the pass is past its first reader in graph order; the weights
  // complete at the same node are summed together, one ring allreduce per group of devices over
  // every box that group shares. Then each device updates the weight elements it holds (the cost
  // model's weight_update of each box).
  void synchronize_weights(const std::vector<int>& mirror) {
    struct Group {
      double bytes = 0;
      int node = 0;
      std::vector<int> deps;
    };
    // A group of packed boxes, or one whole gradient summed in place (the weight's node).
    struct GroupKey {
      int complete_at;
      std::vector<int> devices;
      int in_place;
      bool operator<(const GroupKey& o) const {
        return std::tie(complete_at, devices, in_place) < std::tie(o.complete_at, o.devices, o.in_place);
      }
    };
    struct Update {
      double seconds = 0;
      bool estimated = false;  // some box's update is not measured: the device pays a launch
      int node = 0;
      std::vector<int> deps;
    };
    std::map<GroupKey, Group> groups;  // by the node completing them, devices, and weight summed in place
    std::map<int, Update> updates;     // by device
    for (const auto& weight_reads : reads_) {
      // Plain references rather than a structured binding, so that the lambdas below may capture them.
      const auto& weight = weight_reads.first;
      const WeightReaders& readers = weights_[weight];
      int complete_at = std::numeric_limits<int>::max();
      for (const auto& [device, tasks] : readers.tasks)
        for (int t : tasks) complete_at = std::min(complete_at, out_.tasks[static_cast<std::size_t>(t)].node);
      // The gradient tasks of the weight on the given devices.
      const auto after = [&](const std::vector<int>& devices) {
        std::vector<int> out;
        for (int d : devices)
          if (auto it = readers.tasks.find(d); it != readers.tasks.end())
            for (int t : it->second) out.push_back(mirror[static_cast<std::size_t>(t)]);
        return out;
      };
      const std::vector<std::int64_t>& whole = graph_.node(weight).output_shapes[0].dims;
      for (const auto& [devices, box] : shares_of(weight, weight_reads.second)) {
        if (devices.size() > 1) {
          Group& g = groups[{complete_at, devices, pcg::gradient_summed_in_place(box, pcg::whole_region(whole)) ? weight : -1}];
          if (g.deps.empty()) g.node = weight;
          g.bytes += static_cast<double>(box.elements()) * kBytesPerElement;
          const std::vector<int> deps = after(devices);
          g.deps.insert(g.deps.end(), deps.begin(), deps.end());
        }
        const TaskEstimate update = model_.weight_update(box.extent(), whole);
        for (int d : devices) {
          Update& u = updates[d];
          if (u.deps.empty()) u.node = weight;
          u.seconds += update.seconds;
          u.estimated = u.estimated || !update.measured;
          if (devices.size() == 1) {
            const std::vector<int> deps = after(devices);
            u.deps.insert(u.deps.end(), deps.begin(), deps.end());
          }
        }
      }
    }
    for (auto& [key, g] : groups) {
      const std::vector<int>& devices = key.devices;
      const auto k = static_cast<double>(devices.size());
      std::vector<int> packs, ring;
      if (key.in_place < 0) {  // a gradient summed in place is not packed
        for (int d : devices) {
          SimTask pack;
          pack.node = g.node;
          pack.device = d;
          pack.backward = true;
          pack.seconds = kGradientPackPasses * g.bytes / machine_.device.memory_bandwidth;
          pack.deps = g.deps;
          pack.label = "gradient pack on " + std::to_string(d);
          packs.push_back(add(std::move(pack)));
        }
      }
      g.deps.insert(g.deps.end(), packs.begin(), packs.end());
      for (std::size_t i = 0; i < devices.size(); ++i) {
        SimTask t;
        t.kind = TaskKind::Communication;
        t.node = g.node;
        t.device = devices[i];
        t.peer = devices[(i + 1) % devices.size()];
        t.backward = true;
        // Each device sends (k-1)/k of the buffer twice: reduce-scatter, then all-gather.
        t.bytes = 2 * (k - 1) / k * g.bytes;
        t.seconds = machine_.link_between(t.device, t.peer).started_ring_allreduce_seconds(g.bytes, static_cast<int>(devices.size()));
        t.deps = g.deps;
        t.label = "gradient allreduce " + std::to_string(t.device) + "->" + std::to_string(t.peer);
        hold_devices(t, {t.device});
        ring.push_back(add(std::move(t)));
      }
      for (int d : devices) updates[d].deps.insert(updates[d].deps.end(), ring.begin(), ring.end());
    }
    for (auto& [device, u] : updates) {
      SimTask t;
      t.node = u.node;
      t.device = device;
      t.backward = true;
      t.seconds = u.seconds + (u.estimated ? machine_.device.kernel_overhead : 0);
      t.deps = std::move(u.deps);
      t.label = "weight update on " + std::to_string(device);
      add(std::move(t));
    }
  }

  const pcg::Graph& graph_;
  const CostModel& model_;
  const Machine& machine_;
  const RunWork run_work_;
  TaskGraph out_;
  std::vector<std::vector<std::vector<Holder>>> holders_;  // node -> port -> task
  std::vector<bool> consumed_;                             // node -> some node reads it
  std::map<int, WeightReaders> weights_;                   // by weight node
  std::map<int, pcg::InputReads> reads_;                   // by weight node
  std::vector<pcg::PortRef> sources_;                      // node -> what a layout change moves from
  std::vector<bool> fused_away_;                           // node -> a layout change fused into the next
};

}  // namespace

TaskGraph build_task_graph(const pcg::Graph& graph, const CostModel& model, RunWork run_work) {
  return Builder(graph, model, run_work).build();
}

std::vector<pcg::PortRef> layout_change_sources(const pcg::Graph& graph, const CostModel& model) {
  return Builder(graph, model, RunWork::Included).layout_change_sources();
}

std::map<int, std::map<int, std::vector<pcg::Region>>> weight_update_boxes(const pcg::Graph& graph, const CostModel& model) {
  return Builder(graph, model, RunWork::Included).weight_update_boxes();
}

double communication_bytes(const TaskGraph& graph) {
  double bytes = 0;
  for (const SimTask& t : graph.tasks)
    if (t.kind == TaskKind::Communication) bytes += t.bytes;
  return bytes;
}

}  // namespace loom::search
