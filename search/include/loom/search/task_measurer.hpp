#pragma once
// Measuring before searching, as FlexFlow does: the cost model asks a measurer for the time of
// each distinct operator task the profile database lacks, the first time it needs it, and keeps
// the figure in the database. The runtime implements the measurer (it runs the task); the search
// only sees this interface.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/parallel_shape.hpp"
#include "loom/search/profile_db.hpp"

namespace loom::search {

struct MeasuredTask {
  double forward_seconds = 0;
  std::optional<double> backward_seconds;  // none when no input of the task takes a gradient
  std::int64_t samples = 0;                // timed runs the figures are the medians of
};

// One piece of a layout change (layout_change_key): the parallelization operator or fused form
// `op` with `attrs` turning `from` into `to`. `from_input`: its source is a graph input, whose
// pieces each device loads from the whole value; `gradient`: a gradient runs back through it;
// `ends_chain`: the plan runs it as the end of a chain of changes fused into one (`from` is the
// chain's source), which is not measured alone, only recorded in a run.
struct LayoutChangeTask {
  std::string op;
  pcg::AttrMap attrs;
  pcg::ParallelShape from, to;
  bool from_input = false;
  bool gradient = false;
  bool ends_chain = false;

  ProfileKey key(const std::string& device) const { return layout_change_key(from, to, from_input, gradient, device); }
};

// The loss of one piece of the graph's output (loss_key): `loss` over a box of extent `box` of an
// output of dims `whole`; `probabilities`: the output holds probabilities; `rows_shared`: the
// piece's rows' statistics are taken for the devices to gather.
struct LossTask {
  LossKind loss = LossKind::CrossEntropy;
  std::vector<std::int64_t> box, whole;
  bool probabilities = false;
  bool rows_shared = false;

  ProfileKey key(const std::string& device) const { return loss_key(loss, box, whole, probabilities, rows_shared, device); }
};

class TaskMeasurer {
 public:
  virtual ~TaskMeasurer() = default;
  // The device kind (a machine file's `device.kind`) whose tasks it can run, e.g. "cpu".
  virtual std::string device_kind() const = 0;
  // One task of the key's operator and attributes, reading input pieces of its shapes, its
  // backward computing the gradients of the inputs the key says; nullopt when the task cannot be
  // run alone (the cost model then keeps its roofline). Throws LoomError only on a fault of the
  // measurer itself.
  virtual std::optional<MeasuredTask> measure(const ProfileKey& task) = 0;
  // The step of `optimizer` ("sgd", "adam") over `box` (its extent, from the origin) of a weight of
  // dims `whole`; the forward figure is the step. Nullopt when the measurer cannot run it.
  virtual std::optional<MeasuredTask> measure_update(const std::string& optimizer, const std::vector<std::int64_t>& box,
                                                     const std::vector<std::int64_t>& whole) = 0;
  // Adding one gradient of a weight of dims `whole` into another (gradient_accumulation_key); the
  // forward figure is the addition. Nullopt when the measurer cannot run it.
  virtual std::optional<MeasuredTask> measure_accumulation(const std::vector<std::int64_t>& whole) = 0;
  // The work of one piece of a layout change on the device holding it, outside the messages and
  // collectives it waits in, forward and (where `change.gradient`) backward. Nullopt when the
  // measurer cannot run it.
  virtual std::optional<MeasuredTask> measure_layout_change(const LayoutChangeTask& change) = 0;
  // The loss of one piece of the output and its gradient, as the forward figure. Nullopt when the
  // measurer cannot run it.
  virtual std::optional<MeasuredTask> measure_loss(const LossTask& loss) = 0;
};

// A profile database that measures what it lacks: shared by every copy of a cost model.
class MeasuringProfiles {
 public:
  // `database` receives every measurement; both must outlive this object.
  MeasuringProfiles(ProfileDatabase& database, TaskMeasurer& measurer) : database_(database), measurer_(measurer) {}

  // The entry for `key`, measured first when the database lacks it and the key is for the
  // measurer's device kind. `roofline`: the simulated figure recorded beside the measurement.
  const ProfileEntry* find_or_measure(const ProfileKey& key, double roofline);
  // The same for an optimizer's step over a box of a weight (weight_update_key).
  const ProfileEntry* find_or_measure_update(const std::string& optimizer, const std::vector<std::int64_t>& box,
                                             const std::vector<std::int64_t>& whole, const std::string& device, double roofline);
  // The same for adding up a weight's gradients (gradient_accumulation_key).
  const ProfileEntry* find_or_measure_accumulation(const std::vector<std::int64_t>& whole, const std::string& device, double roofline);
  // The same for a piece of a layout change (layout_change_key), which has no roofline of its own.
  const ProfileEntry* find_or_measure_layout_change(const LayoutChangeTask& change, const std::string& device);
  // The same for the loss of a piece of the output (loss_key).
  const ProfileEntry* find_or_measure_loss(const LossTask& loss, const std::string& device, double roofline);
  const ProfileDatabase& database() const { return database_; }

  // Tasks measured so far, the seconds it took, and the tasks that could not be run alone.
  std::int64_t measured() const { return measured_; }
  double seconds() const { return seconds_; }
  std::int64_t not_measurable() const { return refused_.size(); }
  // Called after each measurement with the tasks measured so far, for progress lines.
  std::function<void(std::int64_t)> on_measured;

 private:
  ProfileDatabase& database_;
  TaskMeasurer& measurer_;
  std::int64_t measured_ = 0;
  double seconds_ = 0;
  template <class Measure>
  const ProfileEntry* find_or(const ProfileKey& key, std::optional<double> roofline, Measure&& measure);

  std::vector<std::string> refused_;  // keys, sorted
};

}  // namespace loom::search
