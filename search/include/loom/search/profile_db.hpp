#pragma once
// Measured operator times, keyed by operator, attributes, per-task input shapes and device kind.
// The runtime fills it; the cost model prefers a measured figure to its roofline estimate. Each
// entry also keeps the roofline figure for the same task, so a database tells how far the
// simulator's estimates are from what the kernels take.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/parallel_shape.hpp"
#include "loom/search/output_loss.hpp"

namespace loom::search {

// The profile database's "format" and its current "version" (older versions are read too).
inline constexpr const char* kProfileFormat = "loom-profile";
inline constexpr int kProfileFormatVersion = 6;

struct ProfileKey {
  std::string op;
  pcg::AttrMap attrs;
  std::vector<pcg::ParallelShape> inputs;
  std::string device;
  // Per input, whether the task's backward computes its gradient (search::inputs_taking_gradients);
  // empty: every input's.
  std::vector<bool> gradients = {};

  // e.g. `matmul{} [64/2, 512] [512, 10]{R2} on V100`, or `matmul{} [64, 512] [512, 10] no-grad 0
  // on V100` for a first layer, whose data input takes no gradient: the stable text the database
  // is keyed by.
  std::string to_string() const;
};

// The key of one task of operator `op` with `attrs` over input pieces of `inputs`' shapes on a
// `device`; `gradients` as ProfileKey's, kept only where some input takes no gradient.
ProfileKey task_key(const std::string& op, const pcg::AttrMap& attrs, std::vector<pcg::ParallelShape> inputs,
                    const std::vector<bool>& gradients, const std::string& device);

// The key of a layout change's work on one device per piece of its new layout, outside the
// messages and collectives: `layout_change{gradient=G, loaded=L} FROM TO on DEVICE`, the shapes it
// changes between; `loaded`: its source is a graph input, whose pieces each device loads from the
// whole value; `gradient`: a gradient runs back through it. Both change the work.
ProfileKey layout_change_key(const pcg::ParallelShape& from, const pcg::ParallelShape& to, bool loaded, bool gradient,
                             const std::string& device);

// The key of an optimizer's step over one box of a weight on one device: `OPTIMIZER_update{} BOX
// WHOLE on DEVICE`, the box's extent and the weight's dims (e.g. `sgd_update{} [512, 128]
// [512, 256] on cpu_host`): a box that is not all of the weight is updated in strided runs.
ProfileKey weight_update_key(const std::string& optimizer, const std::vector<std::int64_t>& box, const std::vector<std::int64_t>& whole,
                             const std::string& device);

// The key of adding one gradient of a weight into another on one device, as a pipeline's step adds
// up its micro-batches' gradients: `gradient_accumulation{} WHOLE on DEVICE`, the weight's dims.
ProfileKey gradient_accumulation_key(const std::vector<std::int64_t>& whole, const std::string& device);

// The key of the loss of one piece of the graph's output on one device (runtime::loss_of_boxes):
// `LOSS_loss{probabilities=P, rows_shared=S} BOX WHOLE on DEVICE`, the piece's extent and the
// output's dims, e.g. `cross-entropy_loss{probabilities=0, rows_shared=1} [64, 500] [64, 1000] on
// cpu_host`; `rows_shared`: the piece's rows' statistics are taken and gathered (shares_row_statistics).
ProfileKey loss_key(LossKind loss, const std::vector<std::int64_t>& box, const std::vector<std::int64_t>& whole, bool probabilities,
                    bool rows_shared, const std::string& device);

// This user's profile database for the machine called `machine_name`, where `loom optimize` and
// `loom simulate` keep the tasks they measure: MACHINE.json in the `profiles` folder of the user's
// cache folder (pcg::user_cache_dir).
std::string user_profile_path(const std::string& machine_name);

struct ProfileEntry {
  std::string op, device;
  double measured_seconds = 0;              // mean over the samples (each a median where measured alone)
  std::optional<double> simulated_seconds;  // the roofline for the same task; absent in version-1 files
  std::int64_t samples = 1;                 // task runs the mean is over
  std::optional<double> backward_seconds;   // the task's backward, mean over its own samples
  std::int64_t backward_samples = 0;
  // Measured with the task alone on the host, as `loom optimize` measures before searching, not
  // in a run where the node's other devices compute at the same time (DeviceSpec::busy_node_slowdown).
  bool alone = false;

  // measured / simulated - 1: how far the roofline is below (negative) or above the measurement.
  std::optional<double> roofline_error() const;
};

class ProfileDatabase {
 public:
  // File form (version 6): {"format": "loom-profile", "version": 6, "entries": [{"key", "op",
  // "device", "measured_seconds", "simulated_seconds"?, "samples", "backward_seconds"?,
  // "backward_samples"?, "alone"?}, ...]}. Version 4 and 5 files are read without their entries
  // measured alone, which ran the same input again and again (version 4) or inputs drawn evenly
  // from -1 to 1 rather than the run's values (version 5; runtime/task_measurement.hpp says why
  // both mislead), so those tasks are measured again. Version 3 files have no "alone" (their entries are
  // read as recorded in runs, not alone); version 2 files have no backward figures; version 1
  // files, whose entries hold "seconds" instead of "measured_seconds" to "samples", are read as one sample
  // without a simulated figure. A missing file is an empty database; a malformed one throws
  // LoomError naming the file and the JSON path.
  static ProfileDatabase load(const std::string& path);
  // Writes version 6 to a temporary file first, so an interrupted write loses nothing already there.
  void save(const std::string& path) const;

  // The measured time of one task, forward and (where measured) backward.
  std::optional<double> seconds(const ProfileKey& key) const;
  std::optional<double> backward_seconds(const ProfileKey& key) const;
  const ProfileEntry* find(const ProfileKey& key) const;
  // Adds `samples` task runs averaging `measured_seconds`: a key already present keeps the mean
  // over all its samples, and the newest simulated figure given; `alone` as ProfileEntry's, an
  // entry staying alone only while every record of it is. Throws LoomError on a time that is not
  // positive or a sample count below one.
  void record(const ProfileKey& key, double measured_seconds, std::optional<double> simulated_seconds = std::nullopt,
              std::int64_t samples = 1, bool alone = false);
  // Adds `samples` backward runs of a task whose forward is recorded; the same checks, and a
  // LoomError when the key has no forward entry.
  void record_backward(const ProfileKey& key, double measured_seconds, std::int64_t samples = 1);
  std::size_t size() const { return entries_.size(); }
  // By key text.
  const std::map<std::string, ProfileEntry>& entries() const { return entries_; }

 private:
  std::map<std::string, ProfileEntry> entries_;
};

}  // namespace loom::search
