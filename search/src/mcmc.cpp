// FlexFlow's MCMC search over per-operator parallel configurations (FlexFlow section 6).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>

#include "loom/search/baselines.hpp"

namespace loom::search {
namespace {

class Proposer {
 public:
  Proposer(const spec::Library& library, const pcg::Graph& graph, int devices, std::uint64_t seed)
      : library_(library), graph_(graph), devices_(devices), degrees_(divisor_degrees(devices)), configs_(graph.size()), rng_(seed) {
    for (const pcg::Node& n : graph.nodes())
      if (is_compute_node(library, n)) compute_.push_back(n.id);
  }

  bool empty() const { return compute_.empty(); }

  struct Change {
    std::size_t node = 0;
    Placement before;
  };

  // Gives one random compute node of `placements` a random configuration and first device, and
  // says what it held before, for undo().
  Change propose(std::vector<Placement>& placements) {
    const int id = compute_[pick(compute_.size())];
    const std::vector<ParallelConfig>& configs = configs_of(id);
    Change change{static_cast<std::size_t>(id), {}};
    Placement& p = placements[change.node];
    change.before = std::move(p);
    p = Placement{};
    p.config = configs[pick(configs.size())];
    const std::int64_t slots = std::max<std::int64_t>(1, devices_ / p.config.tasks());
    p.first_device = static_cast<int>(p.config.tasks() * static_cast<std::int64_t>(pick(static_cast<std::size_t>(slots))));
    return change;
  }

  static void undo(std::vector<Placement>& placements, Change& change) { placements[change.node] = std::move(change.before); }

  // Uniform in [0, 1).
  double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }

  const std::mt19937_64& rng() const { return rng_; }
  void set_rng(const std::mt19937_64& rng) { rng_ = rng; }

 private:
  std::size_t pick(std::size_t count) { return std::uniform_int_distribution<std::size_t>(0, count - 1)(rng_); }

  const std::vector<ParallelConfig>& configs_of(int id) {
    auto& slot = configs_[static_cast<std::size_t>(id)];
    if (!slot) slot = node_configs(library_, graph_, graph_.node(id), degrees_);
    return *slot;
  }

  const spec::Library& library_;
  const pcg::Graph& graph_;
  int devices_;
  std::vector<std::int64_t> degrees_;
  std::vector<int> compute_;
  std::vector<std::optional<std::vector<ParallelConfig>>> configs_;  // by node id, computed when first proposed
  std::mt19937_64 rng_;
};

bool accept(double current, double proposed, double beta, Proposer& proposer) {
  if (!std::isfinite(proposed)) return false;
  if (!std::isfinite(current) || proposed <= current) return true;
  return proposer.uniform() < std::exp(-beta * (proposed - current) / current);
}

}  // namespace

McmcResult mcmc_search(const spec::Library& library, const pcg::Graph& graph, const CostModel& model, const McmcOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto ago = [](double seconds) {
    return Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };
  if (options.resume && !options.resume->left_off) return *options.resume;  // it ran every step
  McmcResult result;
  Proposer proposer(library, graph, model.machine().devices(), options.seed);
  std::vector<Placement> current;
  double current_seconds = 0;
  std::size_t first_step = 0;
  Clock::time_point began, last_improved;
  if (options.resume) {
    result = *options.resume;
    const std::shared_ptr<const McmcWalkState> at = std::move(result.left_off);
    current = at->current;
    current_seconds = at->current_seconds;
    proposer.set_rng(at->rng);
    first_step = at->step;
    began = ago(at->elapsed_seconds);
    last_improved = ago(at->since_improved_seconds);
  } else {
    result.placements = options.initial.empty() ? data_parallel(library, graph, model.machine()) : options.initial;
    result.initial_seconds = result.seconds = placement_seconds(library, graph, result.placements, model);
    if (proposer.empty()) return result;
    current = result.placements;
    current_seconds = result.seconds;
    began = last_improved = Clock::now();
  }
  const auto seconds_since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  auto out_of_time = [&] {
    if (options.max_seconds <= 0) return false;
    return seconds_since(began) > options.max_seconds || seconds_since(last_improved) > options.max_seconds / 2;
  };
  for (std::size_t step = first_step; step < options.iterations; ++step) {
    if (out_of_time()) {
      result.left_off = std::make_shared<const McmcWalkState>(
          McmcWalkState{current, current_seconds, proposer.rng(), step, seconds_since(began), seconds_since(last_improved)});
      break;
    }
    Proposer::Change change = proposer.propose(current);
    // A proposal that drew what the node holds already costs what the current plan costs.
    const bool same = current[change.node] == change.before;
    const double seconds = same ? current_seconds : placement_seconds(library, graph, current, model);
    ++result.steps;
    if (!accept(current_seconds, seconds, options.beta, proposer)) {
      Proposer::undo(current, change);
      continue;
    }
    ++result.accepted;
    current_seconds = seconds;
    if (current_seconds < result.seconds) {
      result.seconds = current_seconds;
      result.placements = current;
      last_improved = Clock::now();
    }
  }
  return result;
}

}  // namespace loom::search
