#pragma once
// The runtime's measurer of operator tasks for the search (search::TaskMeasurer): one task run
// alone as training runs it, through the executor, in one process on this host. The task's input
// pieces become whole inputs of a graph of the operator alone, filled as training data is
// (lookup ids are rows of their table), and the operator runs on the kernel training would give
// it: hand-written, compiled from its spec, or interpreted. Its forward and backward are timed
// after a warm-up run that builds kernels and buffers.
#include <optional>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/search/task_measurer.hpp"

namespace loom::runtime {

struct TaskMeasurementSettings {
  std::string device_kind = "cpu";  // the machine files' kind for this host's devices
  bool compile_from_specs = true;   // as `loom train`; false: operators without kernels are interpreted
  int min_runs = 3;                 // timed runs, at least
  int max_runs = 50;                // and at most
  double min_seconds = 0.02;        // timed runs go on until they add up to this much
};

class LocalTaskMeasurer final : public search::TaskMeasurer {
 public:
  explicit LocalTaskMeasurer(const spec::Library& library, TaskMeasurementSettings settings = {})
      : library_(library), settings_(std::move(settings)) {}

  std::string device_kind() const override { return settings_.device_kind; }
  // Float, as `loom train` runs by default. Nullopt when the operator does not accept its pieces
  // as whole inputs (pieces of an operator whose shapes must agree, e.g. rows of square scores)
  // or no kernel runs it.
  std::optional<search::MeasuredTask> measure(const pcg::Node& node, const std::vector<pcg::ParallelShape>& inputs) override;

 private:
  const spec::Library& library_;
  TaskMeasurementSettings settings_;
};

}  // namespace loom::runtime
