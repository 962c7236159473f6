#pragma once
// The runtime's measurer of operator tasks for the search (search::TaskMeasurer): one task run
// alone as training runs it, through the executor, in one process on this host. The task's input
// pieces become whole inputs of a graph of the operator alone, filled as training data is
// (lookup ids are rows of their table), and the operator runs on the kernel training would give
// it: hand-written, compiled from its spec, or interpreted. Its forward and backward are timed
// after a warm-up run that builds kernels and buffers. Each run reads its data and matrices drawn
// anew: from the values a model's run reads (runtime::RunValues) for the task's operator,
// attributes and input where the settings hold them, so that a kernel whose speed depends on its
// values reads values like the run's, else with their signs flipped at random. Run again and
// again on one input, a small kernel's branches are learned by the branch predictor, which
// training, whose values change every step, never allows (AlexNet's max pools and ReLUs ran 2-5
// times faster alone than in a step). An optimizer's step over a box of a weight, and adding up a
// weight's gradients, are timed the same way. A figure is the median of the timed runs, so a spell
// of other work on a shared host moves it less than it moves a mean.
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/runtime/run_values.hpp"
#include "loom/search/task_measurer.hpp"

namespace loom::runtime {

struct TaskMeasurementSettings {
  std::string device_kind = "cpu";  // the machine files' kind for this host's devices
  bool compile_from_specs = true;   // as `loom train`; false: operators without kernels are interpreted
  int min_runs = 3;                 // timed runs, at least
  int max_runs = 50;                // and at most
  double min_seconds = 0.02;        // and until this much time has passed
  // What a model's operators read in a run (sample_run_values); none: inputs uniform in [-1, 1].
  std::shared_ptr<const RunValues> run_values;
};

// Flips each value's sign or keeps it, at random, one bit of `rng` each: values drawn uniformly
// about zero stay so drawn.
void redraw_signs(std::vector<float>& values, std::mt19937_64& rng);
// Each of `values` drawn at random from `sample` (a run's values, RunValues), with replacement.
void draw_from(const std::vector<float>& sample, std::vector<float>& values, std::mt19937_64& rng);

class LocalTaskMeasurer final : public search::TaskMeasurer {
 public:
  explicit LocalTaskMeasurer(const spec::Library& library, TaskMeasurementSettings settings = {})
      : library_(library), settings_(std::move(settings)) {}

  std::string device_kind() const override { return settings_.device_kind; }
  // Measures from now on with inputs drawn from the values `sample` gives (as
  // TaskMeasurementSettings::run_values; nullptr: uniform), called once, when a task is first
  // measured, so that nothing is sampled where every task is in the database.
  void measure_on(std::function<std::shared_ptr<const RunValues>()> sample) { sample_ = std::move(sample); }
  // Float, as `loom train` runs by default. Nullopt when the operator does not accept its pieces
  // as whole inputs (pieces of an operator whose shapes must agree, e.g. rows of square scores)
  // or no kernel runs it.
  std::optional<search::MeasuredTask> measure(const search::ProfileKey& task) override;
  // The optimizer's step (runtime::Optimizer, float) over the box's elements, in strided runs
  // where the box is not all of the weight, as a process of a distributed run updates them.
  std::optional<search::MeasuredTask> measure_update(const std::string& optimizer, const std::vector<std::int64_t>& box,
                                                     const std::vector<std::int64_t>& whole) override;
  // Adding one float gradient of dims `whole` into another, as a pipeline's step does (add_into).
  std::optional<search::MeasuredTask> measure_accumulation(const std::vector<std::int64_t>& whole) override;
  // One process holding every piece runs the change: its source, where not a graph input, made
  // from one by the library's forms (search::RvdSearch), and its result read by another form, as
  // the graph output, so that the change runs as a plan's does. The figures are per piece, moves
  // between pieces local copies (one process runs no collectives). Nullopt for a source of partial
  // sums, a whole value other than a graph input, the end of a fused chain, or more elements than
  // a gibibyte of floats in all.
  std::optional<search::MeasuredTask> measure_layout_change(const search::LayoutChangeTask& change) override;
  // loss_of_boxes over a float piece of the loss's extent (values drawn uniformly in [-1, 1), or in
  // [0.01, 1) for probabilities) with its targets, after row_statistics where the rows are shared.
  // Nullopt for a piece or target of more elements than a gibibyte of floats, a piece larger than
  // the output, or a piece of some of the classes of logits whose rows are not shared.
  std::optional<search::MeasuredTask> measure_loss(const search::LossTask& loss) override;

 private:
  // Calls `run` at least min_runs times and until min_seconds have passed, at most max_runs;
  // returns how many times.
  template <class Run>
  std::int64_t repeat(Run&& run) const;
  // `node`'s forward and backward time per task, the medians over runs of `graph` forward and
  // backward (where `differentiable` names inputs) on `devices` devices in one process, after a
  // warm-up run; `prepare` is given the feeds before each run.
  template <class Prepare>
  std::optional<search::MeasuredTask> time_node(const pcg::Graph& graph, pcg::NodeId node, const std::set<std::string>& differentiable,
                                                int devices, Prepare&& prepare) const;

  const spec::Library& library_;
  TaskMeasurementSettings settings_;
  std::function<std::shared_ptr<const RunValues>()> sample_;
};

}  // namespace loom::runtime
