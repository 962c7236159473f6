#include "measured_costs.hpp"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "loom/pcg/diagnostic.hpp"

namespace loom::cli {

void add_measure_options(CLI::App* cmd, MeasureOptions& opt) {
  cmd->add_option("--profile", opt.profile,
                  "the profile database (loom-profile JSON) of measured task times, which replace the roofline wherever it holds a "
                  "task on the machine's device kind; `loom train --profile` records them too. Tasks measured here are added to "
                  "it. Default: this user's database for the machine, in the cache folder (~/.cache/loom/profiles/MACHINE.json)");
  cmd->add_flag("--no-measure", opt.no_measure,
                "measure nothing: read only --profile, if given, and cost the tasks it lacks by the roofline. Without it, where the "
                "machine's devices are of this host's kind (cpu, as on cpu_host), each distinct task (operator, attributes, "
                "piece shapes) is run alone on this host, forward and backward, the first time the search costs it, its inputs "
                "drawn from the values the model's operators read in one forward pass (some kernels' speed depends on their values)");
  cmd->add_flag("--interpret", opt.interpret,
                "measure operators without a hand-written kernel through the interpreter, as `loom train --interpret` runs "
                "them, instead of compiled from their specs");
}

MeasuredCosts::MeasuredCosts(const spec::Library& library, const search::Machine& machine, const MeasureOptions& opt)
    : library_(library), given_(!opt.profile.empty()), interpret_(opt.interpret) {
  runtime::TaskMeasurementSettings settings;
  settings.compile_from_specs = !opt.interpret;
  path_ = given_ ? opt.profile : search::user_profile_path(machine.name);
  const bool measure = !opt.no_measure && machine.device.kind == settings.device_kind;
  if (given_ && !measure && !std::filesystem::exists(path_))
    throw LoomError("--profile " + path_ + ": no such file (it is made only where tasks are measured: on a machine of this host's " +
                    "device kind, " + settings.device_kind + ", without --no-measure)");
  if (!measure && !given_) {
    path_.clear();  // the roofline alone: this user's database is neither read nor written
    return;
  }
  database_ = search::ProfileDatabase::load(path_);
  if (!measure) return;
  measurer_ = std::make_unique<runtime::LocalTaskMeasurer>(library, settings);
  measuring_ = std::make_shared<search::MeasuringProfiles>(database_, *measurer_);
}

search::CostModel MeasuredCosts::cost_model(const search::Machine& machine, const std::string& optimizer) const {
  if (measuring_) return search::CostModel(library_, machine, measuring_, optimizer);
  return search::CostModel(library_, machine, &database_, optimizer);
}

void MeasuredCosts::measure_on_values_of(const pcg::Graph& model, const runtime::NamedTensors<double>& values, std::uint64_t seed) {
  if (!measurer_) return;
  measurer_->measure_on([this, &model, &values, seed]() -> std::shared_ptr<const runtime::RunValues> {
    try {
      runtime::RunValuesReport sampled = runtime::sample_run_values(library_, model, seed, values, !interpret_);
      sampling_seconds_ = sampled.seconds;
      return std::make_shared<const runtime::RunValues>(std::move(sampled.values));
    } catch (const std::exception& e) {  // out of memory too: the figures do not depend on it
      sampling_failure_ = e.what();
      std::cerr << "\nwarning: the model's forward pass, whose values tasks are measured on, failed (" << e.what()
                << "); tasks are measured on inputs drawn uniformly in [-1, 1]\n";
      return nullptr;
    }
  });
}

void MeasuredCosts::save() const {
  if (measured() == 0 || path_.empty()) return;
  try {
    std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
    database_.save(path_);
  } catch (const std::exception& e) {
    std::cerr << "warning: the " << measured() << " tasks measured could not be kept in " << path_ << ": " << e.what() << "\n";
  }
}

std::string MeasuredCosts::summary() const {
  std::ostringstream os;
  if (measuring_) {
    os << "measured where " << path_ << " has the task (" << database_.size() << " entries, " << measured()
       << " of them measured on this host now, in " << std::fixed;
    os.precision(2);
    os << measure_seconds() << " s";
    if (sampling_seconds_) {
      os.precision(3);
      os << ", " << *sampling_seconds_ << " s of it a forward pass of the model, whose values they read";
    } else if (!sampling_failure_.empty()) {
      os << ", on inputs drawn uniformly in [-1, 1], the model's forward pass having failed";
    }
    os << ")";
    if (measuring_->not_measurable() > 0)
      os << ", " << measuring_->not_measurable() << " tasks that cannot run alone by the roofline (layout changes by their bytes)";
    os << ", else the roofline";
  } else if (!path_.empty()) {
    os << "measured where " << path_ << " has the task (" << database_.size() << " entries), else the roofline";
  } else {
    os << "the roofline";
  }
  return os.str();
}

}  // namespace loom::cli
