#include "loom/runtime/task_measurement.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <set>
#include <utility>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/median.hpp"
#include "loom/runtime/data.hpp"
#include "loom/runtime/initializer.hpp"
#include "loom/runtime/kernel_registry.hpp"
#include "loom/runtime/loss.hpp"
#include "loom/runtime/optimizer.hpp"
#include "loom/runtime/sharded_executor.hpp"
#include "loom/runtime/transport.hpp"
#include "loom/search/layout_forms.hpp"
#include "loom/search/rvd_search.hpp"
#include "piece_regions.hpp"

namespace loom::runtime {

void redraw_signs(std::vector<float>& values, std::mt19937_64& rng) {
  std::uint64_t bits = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i % 64 == 0) bits = rng();
    if ((bits >> (i % 64)) & 1) values[i] = -values[i];
  }
}

void draw_from(const std::vector<float>& sample, std::vector<float>& values, std::mt19937_64& rng) {
  if (sample.empty()) return;
  for (float& v : values) v = sample[rng() % sample.size()];
}

template <class Run>
std::int64_t LocalTaskMeasurer::repeat(Run&& run) const {
  const auto start = std::chrono::steady_clock::now();
  std::int64_t runs = 0;
  for (; runs < settings_.max_runs; ++runs) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (runs >= settings_.min_runs && elapsed >= settings_.min_seconds) break;
    run();
  }
  return runs;
}

template <class Prepare>
std::optional<search::MeasuredTask> LocalTaskMeasurer::time_node(const pcg::Graph& graph, pcg::NodeId node,
                                                                 const std::set<std::string>& differentiable, int devices,
                                                                 Prepare&& prepare) const {
  std::vector<Tensor<float>> output_grads;
  for (pcg::PortRef out : graph.outputs()) {
    Tensor<float> ones(graph.shape_of(out).dims);
    for (float& v : ones.data) v = 1;
    output_grads.push_back(std::move(ones));
  }
  try {  // no kernel for the op, data it cannot be fed, or a kernel refusing these pieces: no figure
    LocalTransport transport;
    ShardedExecutor<float> executor(library_, graph, builtin_kernels(), transport, differentiable, devices, Backend::Cpu,
                                    settings_.compile_from_specs);
    NamedValues<float> feeds =
        to_values(convert<float>(synthetic_data(library_, graph, LossKind::MeanSquaredError, 1, 1)->batch(0).inputs));
    const auto run = [&] {
      prepare(feeds);
      executor.forward(feeds);
      if (!differentiable.empty()) executor.backward_values(output_grads);
    };
    run();
    std::vector<double> forward, backward;
    const std::int64_t runs = repeat([&] {
      executor.restart_operator_times();
      run();
      const OperatorTime& time = executor.operator_times()[node.index()];
      forward.push_back(time.forward_per_task());
      if (time.backward_tasks > 0) backward.push_back(time.backward_per_task());
    });
    search::MeasuredTask measured;
    measured.forward_seconds = pcg::median(forward);
    measured.samples = runs;
    if (!backward.empty()) measured.backward_seconds = pcg::median(backward);
    return measured;
  } catch (const LoomError&) {
    return std::nullopt;
  } catch (const std::bad_alloc&) {  // more than this host holds: it keeps its roofline
    return std::nullopt;
  }
}

std::optional<search::MeasuredTask> LocalTaskMeasurer::measure(const search::ProfileKey& task) {
  if (sample_) settings_.run_values = std::exchange(sample_, nullptr)();
  const std::vector<pcg::ParallelShape>& inputs = task.inputs;
  if (!task.gradients.empty() && task.gradients.size() != inputs.size()) return std::nullopt;
  pcg::Graph graph;
  std::vector<pcg::PortRef> ports;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    ports.push_back({graph.add_input("input" + std::to_string(i), pcg::ParallelShape::unpartitioned(inputs[i].piece_dims())), 0});
  pcg::NodeId node;
  try {
    node = graph.add_node(library_, task.op, task.attrs, ports, "task");
  } catch (const LoomError&) {
    return std::nullopt;
  }
  for (std::size_t k = 0; k < graph.node(node).output_shapes.size(); ++k) graph.mark_output({node, static_cast<int>(k)});

  // Data and matrices take their gradients where the task says, and are drawn anew before each
  // run: from the run's values where the settings hold them, else with their signs flipped at
  // random (values drawn uniformly about zero stay so drawn).
  std::set<std::string> differentiable;
  std::vector<std::pair<std::string, const std::vector<float>*>> redrawn;  // and the run's values
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const InputRole role = input_role(library_, graph, ports[i].node);
    if (role != InputRole::Data && role != InputRole::Matrix) continue;
    const std::string& name = graph.node(ports[i].node).name;
    redrawn.emplace_back(name, settings_.run_values ? settings_.run_values->sample(task.op, task.attrs, i) : nullptr);
    if (task.gradients.empty() || task.gradients.at(i)) differentiable.insert(name);
  }
  std::mt19937_64 draws(1);
  return time_node(graph, node, differentiable, 1, [&](NamedValues<float>& feeds) {
    for (const auto& [name, sample] : redrawn) {
      std::vector<float>& values = feeds.at(name).host_mut().data;
      if (sample)
        draw_from(*sample, values, draws);
      else
        redraw_signs(values, draws);
    }
  });
}

namespace {

// A machine of `devices` devices on which any chain of layout forms can be priced: only the
// choice of a chain that reaches a shape is asked of it, never its cost.
search::Machine pricing_machine(int devices) {
  search::Machine m;
  m.devices_per_socket = devices;
  m.device.peak_flops = 1e12;
  m.device.memory_bandwidth = 1e11;
  m.intra_socket = m.inter_socket = m.inter_node = search::Link(1e10, 1e-6);
  return m;
}

// The first of the library's layout forms, with degrees of two, that applies to `value`, or
// nullopt where none does.
std::optional<pcg::NodeId> add_any_form(const spec::Library& library, pcg::Graph& graph, pcg::PortRef value) {
  const pcg::ParallelShape shape = graph.shape_of(value);
  std::optional<pcg::NodeId> added;
  for (const search::LayoutForm& form : search::layout_forms(library))
    search::each_assignment(form, shape.rank(), {2}, [&](const pcg::AttrMap& attrs) {
      if (added || !form.apply(attrs, shape)) return;
      try {
        added = graph.add_node(library, form.op, attrs, {value});
      } catch (const LoomError&) {  // the library's own rules refuse it: the next
      }
    });
  return added;
}

// Measuring a change holds every piece of its source, its result and their gradients in one
// process, and measuring a loss its piece and target: above this many elements (a gibibyte of
// floats), neither is measured.
constexpr std::int64_t kMostElementsMeasured = std::int64_t{1} << 28;

}  // namespace

std::optional<search::MeasuredTask> LocalTaskMeasurer::measure_layout_change(const search::LayoutChangeTask& change) {
  const pcg::ParallelShape& from = change.from;
  // A graph input is held whole; anything else is built from one by the library's own forms, as
  // the search would move it, which makes partitioned and replicated pieces but no partial sums
  // and no whole value other than an input.
  if (change.from_input ? !from.is_unpartitioned() : from.is_unpartitioned() || from.V != 1) return std::nullopt;
  if (change.ends_chain) return std::nullopt;
  const std::int64_t pieces = std::max(from.tasks(), change.to.tasks());
  if (from.elements() > kMostElementsMeasured / (4 * pieces)) return std::nullopt;
  pcg::Graph graph;
  try {
    // Fed as data, which takes a gradient where the change passes one back, as a weight would.
    const pcg::NodeId input = graph.add_input("x", pcg::ParallelShape::unpartitioned(from.dims));
    pcg::PortRef source{input, 0};
    if (!change.from_input) {
      const search::RvdSearch moves(library_, pricing_machine(static_cast<int>(pieces)));
      const pcg::MachineView whole = pcg::MachineView::contiguous(0, 1);
      const std::optional<search::ReshardPath>& path =
          moves.cheapest(graph.shape_of(source), whole, from, pcg::MachineView::contiguous(0, from.tasks()), /*loaded=*/true);
      if (!path) return std::nullopt;
      for (const search::ReshardStep& step : path->steps) source = {graph.add_node(library_, step.op, step.attrs, {source}), 0};
    }
    if (graph.shape_of(source) != from) return std::nullopt;
    const pcg::NodeId change_node = graph.add_node(library_, change.op, change.attrs, {source}, "change");
    if (graph.node(change_node).output_shapes.at(0) != change.to) return std::nullopt;
    // Read by a change that makes the graph output: its pieces are taken where they are, so the
    // measured change runs as one read inside a plan does.
    const std::optional<pcg::NodeId> reader = add_any_form(library_, graph, {change_node, 0});
    if (!reader) return std::nullopt;
    graph.mark_output({*reader, 0});
    int devices = 1;
    for (const pcg::Node& n : graph.nodes()) {
      graph.set_view(n.id, pcg::MachineView::contiguous(0, n.tasks()));
      devices = std::max(devices, static_cast<int>(n.tasks()));
    }
    std::set<std::string> differentiable;
    if (change.gradient) differentiable.insert("x");
    std::optional<search::MeasuredTask> measured = time_node(graph, change_node, differentiable, devices, [](NamedValues<float>&) {});
    // A replica of a graph input is read where it is: nothing is done forward, which a clock may
    // read as no time at all.
    if (measured) measured->forward_seconds = std::max(measured->forward_seconds, 1e-9);
    return measured;
  } catch (const LoomError&) {
    return std::nullopt;
  }
}

std::optional<search::MeasuredTask> LocalTaskMeasurer::measure_update(const std::string& optimizer, const std::vector<std::int64_t>& box,
                                                                      const std::vector<std::int64_t>& whole) {
  if (box.size() != whole.size()) return std::nullopt;
  const pcg::Region region = pcg::whole_region(box);
  const pcg::Region all = pcg::whole_region(whole);
  for (std::size_t d = 0; d < box.size(); ++d)
    if (box[d] > whole[d]) return std::nullopt;
  ElementRanges only;
  std::vector<ElementRange>& runs = only["w"];
  for_each_run_in_box(all, region, [&](std::size_t at, std::size_t, std::size_t n) { runs.push_back({at, at + n}); });
  NamedValues<float> params, grads;
  params.emplace("w", Tensor<float>(whole));
  Tensor<float> gradient(whole);
  for (float& g : gradient.data) g = 1e-3f;
  grads.emplace("w", std::move(gradient));
  Optimizer<float> step(optimizer_from_name(optimizer));
  std::map<std::string, double> seconds;
  step.step(params, grads, &only, &seconds);
  std::vector<double> each;
  const std::int64_t runs_made = repeat([&] {
    seconds.clear();
    step.step(params, grads, &only, &seconds);
    each.push_back(seconds["w"]);
  });
  if (runs_made == 0) return std::nullopt;
  search::MeasuredTask measured;
  measured.forward_seconds = pcg::median(each);
  measured.samples = runs_made;
  return measured;
}

std::optional<search::MeasuredTask> LocalTaskMeasurer::measure_loss(const search::LossTask& loss) {
  const pcg::Region box{std::vector<std::int64_t>(loss.box.size(), 0), loss.box};
  if (loss.box.size() != loss.whole.size() || box.elements() < 1 || box.elements() > kMostElementsMeasured) return std::nullopt;
  for (std::size_t i = 0; i < loss.box.size(); ++i)
    if (loss.box[i] > loss.whole[i]) return std::nullopt;
  // The target: the whole output's values for the mean squared error, its rows' labels otherwise.
  const std::int64_t target_elements =
      loss.loss == LossKind::MeanSquaredError ? pcg::whole_region(loss.whole).elements() : search::output_rows(loss.whole);
  if (target_elements > kMostElementsMeasured) return std::nullopt;
  // A piece of some of the classes takes its loss only from rows' statistics.
  if (loss.loss == LossKind::CrossEntropy && !loss.probabilities && !loss.rows_shared && !loss.box.empty() &&
      loss.box.back() != loss.whole.back())
    return std::nullopt;
  std::mt19937_64 rng(7);
  Tensor<float> piece(loss.box);
  std::uniform_real_distribution<float> value(loss.probabilities ? 0.01f : -1.0f, 1.0f);
  for (float& v : piece.data) v = value(rng);
  Tensor<double> target;
  if (loss.loss == LossKind::MeanSquaredError) {
    target = Tensor<double>(loss.whole, 0.5);
  } else {
    std::vector<std::int64_t> rows(loss.whole.begin(), loss.whole.empty() ? loss.whole.end() : loss.whole.end() - 1);
    target = Tensor<double>(rows);
    const std::int64_t classes = loss.box.empty() ? 1 : loss.box.back();  // labels within the piece's classes
    for (double& label : target.data) label = static_cast<double>(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(classes)));
  }
  const std::vector<HeldBox<float>> boxes{{box, &piece}};
  std::vector<double> each;
  const std::int64_t runs = repeat([&] {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<double> rows = loss.rows_shared ? row_statistics(boxes, loss.whole) : std::vector<double>{};
    const LossShare<float> share =
        loss_of_boxes<float>(loss.loss, boxes, loss.whole, target, loss.probabilities, loss.rows_shared ? &rows : nullptr);
    each.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!std::isfinite(share.loss)) throw LoomError("measuring " + loss.key(device_kind()).to_string() + ": the loss is not finite");
  });
  if (runs == 0) return std::nullopt;
  search::MeasuredTask measured;
  measured.forward_seconds = pcg::median(each);
  measured.samples = runs;
  return measured;
}

std::optional<search::MeasuredTask> LocalTaskMeasurer::measure_accumulation(const std::vector<std::int64_t>& whole) {
  if (std::any_of(whole.begin(), whole.end(), [](std::int64_t d) { return d < 1; })) return std::nullopt;
  Value<float> sum = Tensor<float>(whole, 1e-3f);
  const Tensor<float> gradient(whole, 1e-3f);
  std::vector<double> each;
  const std::int64_t runs = repeat([&] {
    Value<float> more(gradient);  // as a micro-batch's backward gives it: made just before
    const auto start = std::chrono::steady_clock::now();
    add_into(sum, std::move(more));
    each.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
  if (runs == 0) return std::nullopt;
  search::MeasuredTask measured;
  measured.forward_seconds = pcg::median(each);
  measured.samples = runs;
  return measured;
}

}  // namespace loom::runtime
