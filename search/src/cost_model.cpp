#include "loom/search/cost_model.hpp"

#include <algorithm>

#include "loom/interpreter/input_roles.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/piece_moves.hpp"
#include "loom/pcg/weight_folding.hpp"
#include "loom/search/gradient_flow.hpp"
#include "loom/search/graph_split.hpp"

namespace loom::search {
namespace {

// What an optimizer step reads and writes per weight element: SGD reads the element and its
// gradient and writes the element; Adam also reads and writes its two moments.
double update_bytes_per_element(const std::string& optimizer) {
  if (optimizer == "sgd") return 3 * kBytesPerElement;
  if (optimizer == "adam") return 7 * kBytesPerElement;
  throw LoomError("cost model: unknown optimizer '" + optimizer + "' (expected sgd or adam)");
}

// The profile database to look a task up in: none where there is none or it is empty, so that no
// key is built for nothing, on the search's hot path.
const ProfileDatabase* searched(const ProfileDatabase* profiles) { return profiles && profiles->size() > 0 ? profiles : nullptr; }

}  // namespace

Roofline bare_roofline(const pcg::TaskCost& cost, const DeviceSpec& device) {
  constexpr double kElementBytes = 4;
  const double bytes = cost.bytes_read + cost.bytes_written;
  return {std::max(cost.flops / device.peak_flops, bytes / device.memory_bandwidth),
          std::max(cost.backward_flops / device.peak_flops, 2 * bytes / device.memory_bandwidth),
          device.unfolding_bandwidth > 0 ? cost.unfolded_elements * kElementBytes / device.unfolding_bandwidth : 0};
}

int backward_unfoldings(std::uint64_t unfolding_inputs, const std::vector<bool>& gradients) {
  int passes = 0;
  for (std::size_t i = 0; i < 64; ++i)
    if (((unfolding_inputs >> i) & 1) && (gradients.empty() || (i < gradients.size() && gradients[i]))) ++passes;
  return passes;
}

CostModel::CostModel(const spec::Library& library, const Machine& machine, const ProfileDatabase* profiles, std::string optimizer)
    : library_(library),
      machine_(machine),
      profiles_(profiles),
      optimizer_(std::move(optimizer)),
      update_bytes_per_element_(update_bytes_per_element(optimizer_)),
      moves_(std::make_shared<const RvdSearch>(library, machine)),
      detaches_(
          std::any_of(library.ops().begin(), library.ops().end(), [](const spec::OpDecl* op) { return spec::detaches_gradient(*op); })),
      trained_(std::make_shared<std::unordered_map<std::string, bool>>()) {}

CostModel::CostModel(const spec::Library& library, const Machine& machine, std::shared_ptr<MeasuringProfiles> measuring,
                     std::string optimizer)
    : CostModel(library, machine, measuring ? &measuring->database() : nullptr, std::move(optimizer)) {
  measuring_ = std::move(measuring);
}

double CostModel::alone_to_busy(bool measured_alone) const {
  return measured_alone && machine_.devices_per_node() > 1 ? machine_.device.busy_node_slowdown : 1;
}

TaskEstimate CostModel::compute(const pcg::Graph& graph, const pcg::Node& node) const {
  std::vector<pcg::ParallelShape> inputs;
  for (pcg::PortRef in : node.inputs) inputs.push_back(graph.shape_of(in));
  return compute(node, inputs, is_compute(node) ? gradient_inputs(graph, node) : std::vector<bool>{});
}

bool CostModel::trains(const pcg::Graph& graph, const pcg::Node& node) const {
  if (node.op != pcg::kWeightOp || read_without_gradient(node)) return false;
  // The model's fixed weights are named as the model names them: a folded weight is fixed when
  // its parts all are.
  if (fixed_ && !fixed_->empty()) {
    if (!node.folded_from && fixed_->count(node.name)) return false;
    if (node.folded_from) {
      const std::vector<std::string> parts = pcg::weight_parts(node);
      if (std::all_of(parts.begin(), parts.end(), [&](const std::string& part) { return fixed_->count(part) > 0; })) return false;
    }
  }
  // Finding a weight's reader scans the graph; the rewrites keep the operator whose notes decide.
  const auto [known, fresh] = trained_->try_emplace(node.name, false);
  if (fresh) known->second = spec::trained_weight(library_, graph, node.id);
  return known->second;
}

std::vector<bool> CostModel::gradient_inputs(const pcg::Graph& graph, const pcg::Node& node) const {
  return inputs_taking_gradients(graph, node, trained_in(graph), detached_inputs());
}

DetachedInput CostModel::detached_inputs() const {
  if (!detaches_) return {};
  return [this](const pcg::Node& n, std::size_t slot) { return spec::detached_input(library_, n, slot); };
}

std::vector<bool> CostModel::gradient_values(const pcg::Graph& graph) const {
  return values_taking_gradients(graph, trained_in(graph), detached_inputs());
}

TaskEstimate CostModel::compute(const pcg::Node& node, const std::vector<pcg::ParallelShape>& inputs,
                                const std::vector<bool>& gradients) const {
  TaskEstimate est;
  if (!is_compute(node)) return est;
  pcg::TaskCost cost = library_.task_cost(node.op, node.attrs, inputs);
  // A backward computes the gradients of the inputs taking one alone: a first layer's data takes none.
  if (std::find(gradients.begin(), gradients.end(), false) != gradients.end() &&
      std::find(gradients.begin(), gradients.end(), true) != gradients.end())
    cost.backward_flops = library_.backward_flops(node.op, node.attrs, inputs, gradients);
  est.flops = cost.flops;
  est.bytes = cost.bytes_read + cost.bytes_written;
  const DeviceSpec& d = machine_.device;
  const Roofline bare = bare_roofline(cost, d);
  const double achieved = d.achieved(cost.shape);
  const double kernel = bare.forward / achieved + bare.unfolding + d.kernel_overhead;
  const double backward_kernel =
      bare.backward / achieved + backward_unfoldings(cost.unfolding_inputs, gradients) * bare.unfolding + 2 * d.kernel_overhead;
  const ProfileDatabase* profiles = searched(profiles_);
  const ProfileEntry* measured = nullptr;
  if (measuring_ || profiles) {
    const ProfileKey key = task_key(node.op, node.attrs, inputs, gradients, d.kind);
    measured = measuring_ ? measuring_->find_or_measure(key, kernel + d.dispatch_overhead) : profiles->find(key);
  }
  // A task none of whose inputs takes a gradient runs no backward.
  const bool backward = gradients.empty() || std::find(gradients.begin(), gradients.end(), true) != gradients.end();
  if (measured) {
    const double busy = alone_to_busy(measured->alone);
    est.seconds = busy * measured->measured_seconds + d.dispatch_overhead;
    const double forward_to_backward = kernel > 0 ? backward_kernel / kernel : 2;
    est.backward_seconds =
        backward ? busy * measured->backward_seconds.value_or(forward_to_backward * measured->measured_seconds) + d.dispatch_overhead : 0;
    est.measured = true;
    return est;
  }
  const double busy = alone_to_busy(true);
  est.seconds = busy * kernel + d.dispatch_overhead;
  est.backward_seconds = backward ? busy * backward_kernel + d.dispatch_overhead : 0;
  return est;
}

double CostModel::local_seconds(const pcg::Graph& graph, const pcg::Node& node) const {
  if (node.is_graph_input()) return 0;
  if (is_compute(node)) {
    std::vector<pcg::ParallelShape> inputs;
    for (pcg::PortRef in : node.inputs) inputs.push_back(graph.shape_of(in));
    std::vector<bool> gradients = gradient_inputs(graph, node);
    if (std::find(gradients.begin(), gradients.end(), true) != gradients.end() && cut_off_from_gradients(graph, node, detached_inputs()))
      gradients.assign(gradients.size(), false);  // a recycling pass: its forward alone
    const TaskEstimate est = compute(node, inputs, gradients);
    return est.seconds + est.backward_seconds;
  }
  std::vector<pcg::ParallelShape> inputs;
  for (pcg::PortRef in : node.inputs) inputs.push_back(graph.shape_of(in));
  const pcg::TaskCost moved = library_.task_cost(node.op, node.attrs, inputs);
  return 2 * (moved.bytes_read + moved.bytes_written) / machine_.device.memory_bandwidth;
}

std::optional<TaskEstimate> CostModel::measured_layout_change(const LayoutChangeTask& change) const {
  const std::string& device = machine_.device.kind;
  const ProfileDatabase* profiles = searched(profiles_);
  const ProfileEntry* measured = measuring_ ? measuring_->find_or_measure_layout_change(change, device)
                                 : profiles ? profiles->find(change.key(device))
                                            : nullptr;
  if (!measured) return std::nullopt;
  const double busy = alone_to_busy(measured->alone);
  TaskEstimate est;
  est.seconds = busy * measured->measured_seconds;
  est.backward_seconds = busy * measured->backward_seconds.value_or(measured->measured_seconds);
  est.measured = true;
  return est;
}

TaskEstimate CostModel::memory_task(double bytes, const std::function<ProfileKey()>& key,
                                    const std::function<const ProfileEntry*(double roofline)>& measure) const {
  TaskEstimate est;
  est.bytes = bytes;
  const double roofline = bytes / machine_.device.memory_bandwidth;
  const ProfileDatabase* profiles = searched(profiles_);
  const ProfileEntry* measured = measuring_ ? measure(roofline) : profiles ? profiles->find(key()) : nullptr;
  est.measured = measured != nullptr;
  est.seconds = measured ? alone_to_busy(measured->alone) * measured->measured_seconds : alone_to_busy(true) * roofline;
  return est;
}

TaskEstimate CostModel::weight_update(const std::vector<std::int64_t>& box, const std::vector<std::int64_t>& whole) const {
  const std::string& device = machine_.device.kind;
  return memory_task(
      static_cast<double>(pcg::whole_region(box).elements()) * update_bytes_per_element_,
      [&] { return weight_update_key(optimizer_, box, whole, device); },
      [&](double roofline) { return measuring_->find_or_measure_update(optimizer_, box, whole, device, roofline); });
}

TaskEstimate CostModel::loss_piece(const std::vector<std::int64_t>& box, const std::vector<std::int64_t>& whole, bool probabilities,
                                   bool rows_shared) const {
  // Reading the piece and the target and writing the gradient: about three passes over the piece.
  constexpr double kLossPasses = 3;
  const std::string& device = machine_.device.kind;
  const LossTask task{loss_, box, whole, probabilities, rows_shared};
  return memory_task(
      kLossPasses * static_cast<double>(pcg::whole_region(box).elements()) * kBytesPerElement, [&] { return task.key(device); },
      [&](double roofline) { return measuring_->find_or_measure_loss(task, device, roofline); });
}

TaskEstimate CostModel::gradient_accumulation(const std::vector<std::int64_t>& whole) const {
  const std::string& device = machine_.device.kind;
  return memory_task(
      3 * static_cast<double>(pcg::whole_region(whole).elements()) * kBytesPerElement,  // two read, one written
      [&] { return gradient_accumulation_key(whole, device); },
      [&](double roofline) { return measuring_->find_or_measure_accumulation(whole, device, roofline); });
}

}  // namespace loom::search
