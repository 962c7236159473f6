#pragma once
// The task costs `loom optimize` and `loom simulate` use: measured figures from the profile
// database (--profile, else this user's database for the machine), and, unless --no-measure, the
// tasks it lacks measured on this host the first time the search costs them, where the machine's
// devices are of this host's kind. New measurements are saved to the database.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "loom/interpreter/library.hpp"
#include "loom/runtime/task_measurement.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/profile_db.hpp"

namespace CLI {
class App;
}

namespace loom::cli {

struct MeasureOptions {
  std::string profile;
  bool no_measure = false;
  bool interpret = false;
};

// --profile, --no-measure and --interpret on `cmd`.
void add_measure_options(CLI::App* cmd, MeasureOptions& opt);

class MeasuredCosts {
 public:
  // Loads the database; throws LoomError naming a malformed one.
  MeasuredCosts(const spec::Library& library, const search::Machine& machine, const MeasureOptions& opt);
  MeasuredCosts(const MeasuredCosts&) = delete;
  MeasuredCosts& operator=(const MeasuredCosts&) = delete;

  search::CostModel cost_model(const search::Machine& machine, const std::string& optimizer) const;
  // Where it measures, measures on the values `model`'s operators read in one forward pass from
  // `seed` (runtime::sample_run_values), `values` giving the model's own, made when a task is
  // first measured; where the model cannot run here, warns on stderr then and measures on inputs
  // drawn uniformly in [-1, 1]. `model` and `values` must outlive this object.
  void measure_on_values_of(const pcg::Graph& model, const runtime::NamedTensors<double>& values, std::uint64_t seed);
  // Writes the database when something was measured; a failure is a warning on stderr, as the
  // command's own result does not depend on it.
  void save() const;

  bool measures() const { return measuring_ != nullptr; }
  std::int64_t measured() const { return measuring_ ? measuring_->measured() : 0; }
  double measure_seconds() const { return measuring_ ? measuring_->seconds() : 0; }
  const std::string& path() const { return path_; }
  std::size_t entries() const { return database_.size(); }
  // One line for the text output: where the costs came from.
  std::string summary() const;

 private:
  const spec::Library& library_;
  std::string path_;
  bool given_;  // --profile named the database
  search::ProfileDatabase database_;
  std::unique_ptr<runtime::LocalTaskMeasurer> measurer_;
  std::shared_ptr<search::MeasuringProfiles> measuring_;
  bool interpret_;                          // --interpret
  std::optional<double> sampling_seconds_;  // the forward pass that sampled the run's values
  std::string sampling_failure_;            // why it did not run
};

}  // namespace loom::cli
