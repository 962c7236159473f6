#include "loom/search/task_graph.hpp"

#include <algorithm>
#include <map>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/piece_moves.hpp"
#include "loom/pcg/task_layout.hpp"

namespace loom::search {
namespace {

constexpr double kBytesPerElement = 4;

class Builder {
 public:
  Builder(const pcg::Graph& graph, const CostModel& model) : graph_(graph), model_(model), machine_(model.machine()) {
    out_.devices = machine_.devices();
    holders_.resize(graph.size());
    consumed_.resize(graph.size(), false);
    for (const pcg::Node& n : graph.nodes())
      for (pcg::PortRef in : n.inputs) consumed_[static_cast<std::size_t>(in.node)] = true;
  }

  TaskGraph build() {
    for (const pcg::Node& n : graph_.nodes()) forward(n);
    mirror_backward();
    return std::move(out_);
  }

 private:
  // Tasks that must finish before piece `task` of a port is available, and where it is.
  struct Holder {
    int device = 0;
    std::vector<int> tasks;
  };

  pcg::MachineView view_of(const pcg::Node& n) const {
    pcg::MachineView view = n.view ? *n.view : pcg::MachineView::contiguous(0, n.tasks());
    for (int d : view.devices)
      if (d < 0 || d >= machine_.devices())
        throw LoomError(n.describe() + ": its machine view uses device " + std::to_string(d) + ", but " + machine_.name + " has " +
                        std::to_string(machine_.devices()) + " devices");
    return view;
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
    t.label = n.op + "#" + std::to_string(n.id) + "[" + std::to_string(index) + "] " + std::to_string(from.device) + "->" + std::to_string(device);
    return {add(std::move(t))};
  }

  void forward(const pcg::Node& n) {
    const pcg::MachineView view = view_of(n);
    auto& held = holders_[static_cast<std::size_t>(n.id)];
    held.resize(n.output_shapes.size());
    if (n.is_graph_input()) {
      held_locally(held[0], view);
      return;
    }
    if (n.inputs.size() == 1 && n.output_shapes.size() == 1 && !model_.is_compute(n)) {
      if (is_unread_output(n)) return;
      if (loads_its_pieces(n)) held_locally(held[0], view);
      else move_data(n, view);
      return;
    }
    const TaskEstimate est = model_.compute(graph_, n);
    for (std::size_t t = 0; t < view.tasks(); ++t) {
      SimTask task;
      task.node = n.id;
      task.index = static_cast<std::int64_t>(t);
      task.device = view.devices[t];
      task.seconds = est.seconds;
      task.label = n.op + "#" + std::to_string(n.id) + "[" + std::to_string(t) + "]";
      for (pcg::PortRef in : n.inputs) {
        const Holder& from = holders_[static_cast<std::size_t>(in.node)][static_cast<std::size_t>(in.port)][t];
        const double bytes = static_cast<double>(pcg::piece_elements(graph_.shape_of(in))) * kBytesPerElement;
        for (int d : deliver(from, task.device, bytes, n, task.index)) task.deps.push_back(d);
      }
      const int id = add(std::move(task));
      for (auto& port : held) port.push_back({view.devices[t], {id}});
    }
  }

  // Pieces that are on the devices of `view` from the start of the iteration.
  static void held_locally(std::vector<Holder>& port, const pcg::MachineView& view) {
    for (std::size_t t = 0; t < view.tasks(); ++t) port.push_back({view.devices[t], {}});
  }

  // A parallelization operator over a data input, or one splitting a weight into shards, moves
  // nothing: each device loads its own piece of the data, and each shard lives on its device.
  bool loads_its_pieces(const pcg::Node& n) const {
    const pcg::Node& source = graph_.node(n.inputs[0].node);
    return source.op == pcg::kInputOp || (source.op == pcg::kWeightOp && n.output_shapes[0].R == 1);
  }

  // A parallelization operator producing only a graph output nobody reads moves nothing: the loss
  // is computed where its input's pieces are.
  bool is_unread_output(const pcg::Node& n) const {
    const auto& outputs = graph_.outputs();
    // Partial sums must still be added up before the loss can read them.
    if (graph_.shape_of(n.inputs[0]).V != n.output_shapes[0].V) return false;
    return !consumed_[static_cast<std::size_t>(n.id)] && std::find(outputs.begin(), outputs.end(), pcg::PortRef{n.id, 0}) != outputs.end();
  }

  // A parallelization operator or fused form moves its input's pieces as pcg::piece_moves says;
  // where partial sums are summed, the receiving device adds them up.
  void move_data(const pcg::Node& n, const pcg::MachineView& view) {
    const pcg::ParallelShape& in = graph_.shape_of(n.inputs[0]);
    const pcg::ParallelShape& out = n.output_shapes[0];
    const auto& sources = holders_[static_cast<std::size_t>(n.inputs[0].node)][static_cast<std::size_t>(n.inputs[0].port)];
    auto& held = holders_[static_cast<std::size_t>(n.id)][0];
    pcg::MachineView from;
    for (const Holder& h : sources) from.devices.push_back(h.device);
    const std::vector<pcg::PieceMove> moves = pcg::piece_moves(in, from, out, view);
    auto move = moves.begin();
    for (std::int64_t t = 0; t < out.tasks(); ++t) {
      const int device = view.devices[static_cast<std::size_t>(t)];
      std::vector<int> deps;
      for (; move != moves.end() && move->to == t; ++move) {
        const Holder& source = sources[static_cast<std::size_t>(move->from)];
        for (int d : deliver(source, device, static_cast<double>(move->region.elements()) * kBytesPerElement, n, t)) deps.push_back(d);
      }
      if (in.V > out.V) {
        SimTask sum;
        sum.node = n.id;
        sum.index = t;
        sum.device = device;
        // Reads each of the partial pieces and writes their sum.
        const double bytes = static_cast<double>((in.V / out.V + 1) * pcg::piece_elements(out)) * kBytesPerElement;
        sum.seconds = bytes / machine_.device.memory_bandwidth + machine_.device.kernel_overhead;
        sum.deps = std::move(deps);
        sum.label = n.op + "#" + std::to_string(n.id) + "[" + std::to_string(t) + "] sum";
        deps = {add(std::move(sum))};
      }
      held.push_back({device, std::move(deps)});
    }
  }

  // The backward pass: every forward task mirrored in reverse order.
  void mirror_backward() {
    const int forward_count = static_cast<int>(out_.tasks.size());
    std::vector<std::vector<int>> dependents(static_cast<std::size_t>(forward_count));
    for (int i = 0; i < forward_count; ++i)
      for (int d : out_.tasks[static_cast<std::size_t>(i)].deps) dependents[static_cast<std::size_t>(d)].push_back(i);
    std::vector<int> mirror(static_cast<std::size_t>(forward_count), -1);
    for (int i = forward_count - 1; i >= 0; --i) {
      SimTask b = out_.tasks[static_cast<std::size_t>(i)];
      b.backward = true;
      if (b.kind == TaskKind::Compute) b.seconds *= 2;
      else std::swap(b.device, b.peer);
      b.deps.clear();
      for (int j : dependents[static_cast<std::size_t>(i)]) b.deps.push_back(mirror[static_cast<std::size_t>(j)]);
      if (b.deps.empty()) b.deps.push_back(i);  // a sink: its gradient follows its own forward result
      b.label += " (backward)";
      mirror[static_cast<std::size_t>(i)] = add(std::move(b));
    }
  }

  const pcg::Graph& graph_;
  const CostModel& model_;
  const Machine& machine_;
  TaskGraph out_;
  std::vector<std::vector<std::vector<Holder>>> holders_;  // node -> port -> task
  std::vector<bool> consumed_;                              // node -> some node reads it
};

}  // namespace

TaskGraph build_task_graph(const pcg::Graph& graph, const CostModel& model) { return Builder(graph, model).build(); }

double communication_bytes(const TaskGraph& graph) {
  double bytes = 0;
  for (const SimTask& t : graph.tasks)
    if (t.kind == TaskKind::Communication) bytes += t.bytes;
  return bytes;
}

}  // namespace loom::search
