#include "loom/superopt/enumerate.hpp"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <numeric>
#include <unordered_set>

#include "loom/superopt/fingerprint.hpp"
#include "loom/superopt/step_eval.hpp"
#include "parallel.hpp"

namespace loom::superopt {
namespace {

using M = spec::ModularDomain;
using MValue = Value<spec::ModularValue>;

// Graphs already enumerated, by their step-order-independent key; shared by the workers.
class SeenGraphs {
 public:
  bool insert(const Key128& key) {
    Shard& shard = shards_[key.hi % kShards];
    std::lock_guard<std::mutex> lock(shard.mutex);
    return shard.keys.insert(key).second;
  }

 private:
  static constexpr std::size_t kShards = 64;
  struct Shard {
    std::mutex mutex;
    std::unordered_set<Key128, Key128Hash> keys;
  };
  std::array<Shard, kShards> shards_;
};

class Worker {
 public:
  Worker(const spec::Library& library, const OpSet& ops, const std::vector<InputTensor>& inputs, const GeneratorOptions& options,
         SeenGraphs& seen)
      : ops_(ops), options_(options), seen_(seen), eval_(library, ops) {
    auto values = modular_inputs(eval_, inputs, options.seed);
    for (std::size_t i = 0; i < inputs.size(); ++i) slots_.push_back({input_ref(i), values[i], input_key(i), -1});
    graphs_by_size.assign(static_cast<std::size_t>(options.max_ops) + 1, 0);
  }

  // Every operator application that could be added to the empty graph.
  std::vector<Step> root_steps() {
    std::vector<Step> steps;
    extensions([&](const Step& s) { steps.push_back(s); });
    return steps;
  }

  void expand_from(const Step& step) {
    if (!push(step)) return;
    search();
    pop();
  }

  // Records the inputs themselves: graphs of no operators.
  void record_inputs() {
    for (const Slot& s : slots_) {
      GraphView view;
      view.output = s.ref;
      found_views.push_back(view);
      found_fingerprints.push_back(truncate_fingerprint(fingerprint(s.value), options_.fingerprint_bits));
    }
  }

  // What this worker found: candidate graphs with their fingerprints, and graphs per size.
  std::vector<GraphView> found_views;
  std::vector<std::uint64_t> found_fingerprints;
  std::vector<std::size_t> graphs_by_size;

 private:
  struct Slot {
    TensorRef ref;
    MValue value;
    Key128 key;
    int node;  // -1 for a graph input
  };
  struct NodeState {
    Step step;
    Key128 key;
    int consumers = 0;
  };

  void search() {
    if (sinks_ == 1) record_sink();
    if (sinks_ == 2 && options_.two_outputs) record_two_sinks();
    if (nodes_.size() >= static_cast<std::size_t>(options_.max_ops)) return;
    extensions([&](const Step& s) {
      if (!push(s)) return;
      search();
      pop();
    });
  }

  // Calls `fn` with every well-typed application of an instance to existing tensors after which
  // the graph can still end with a single sink (or two, with two_outputs) within max_ops operators.
  template <class Fn>
  void extensions(Fn&& fn) {
    const std::size_t remaining_after = static_cast<std::size_t>(options_.max_ops) - nodes_.size() - 1;
    const std::size_t merge_per_op = ops_.max_inputs() > 0 ? ops_.max_inputs() - 1 : 0;
    Step step;
    std::array<const pcg::ParallelShape*, kMaxOpInputs> shapes{};
    std::array<std::size_t, kMaxOpInputs> chosen{};
    for (std::size_t inst = 0; inst < ops_.size(); ++inst) {
      const OpInstance& op = ops_.at(inst);
      step.inst = static_cast<std::uint16_t>(inst);
      step.argc = static_cast<std::uint8_t>(op.inputs);
      auto choose = [&](auto&& self, std::size_t pos) -> void {
        if (pos == op.inputs) {
          std::size_t covered = 0;
          for (std::size_t i = 0; i < pos; ++i) {
            const int node = slots_[chosen[i]].node;
            if (node < 0 || nodes_[static_cast<std::size_t>(node)].consumers > 0) continue;
            bool repeat = false;
            for (std::size_t j = 0; j < i; ++j) repeat = repeat || slots_[chosen[j]].node == node;
            if (!repeat) ++covered;
          }
          const std::size_t sinks_after = sinks_ - covered + 1;
          if (sinks_after > final_sinks() + remaining_after * merge_per_op) return;
          if (!eval_.infer(inst, shapes.data(), pos)) return;
          fn(step);
          return;
        }
        for (std::size_t s = 0; s < slots_.size(); ++s) {
          if (!op.input_ranks[pos].accepts(slots_[s].value.shape->rank())) continue;
          chosen[pos] = s;
          shapes[pos] = slots_[s].value.shape;
          step.args[pos] = slots_[s].ref;
          self(self, pos + 1);
        }
      };
      choose(choose, 0);
    }
  }

  const Slot& slot_of(TensorRef r) const {
    if (is_input_ref(r)) return slots_[input_of(r)];
    return slots_[node_first_slot_[node_of(r)] + port_of(r)];
  }

  // Adds the step unless it repeats a node or makes a graph already enumerated.
  bool push(const Step& step) {
    Key128 key;
    key.add(0x5EEDULL).add(step.inst);
    for (std::size_t i = 0; i < step.argc; ++i) key.add(slot_of(step.args[i]).key);
    for (const NodeState& n : nodes_)
      if (n.key == key) return false;
    std::vector<Key128> keys;
    for (const NodeState& n : nodes_) keys.push_back(n.key);
    keys.push_back(key);
    std::sort(keys.begin(), keys.end());
    Key128 graph_key;
    for (const Key128& k : keys) graph_key.add(k);
    if (!seen_.insert(graph_key)) return false;

    std::array<MValue, kMaxOpInputs> args;
    for (std::size_t i = 0; i < step.argc; ++i) args[i] = slot_of(step.args[i]).value;
    auto outputs = eval_.apply(step.inst, args.data(), step.argc);
    const std::size_t node = nodes_.size();
    for (std::size_t i = 0; i < step.argc; ++i) {
      const TensorRef r = step.args[i];
      if (is_input_ref(r)) continue;
      bool repeat = false;
      for (std::size_t j = 0; j < i; ++j)
        repeat = repeat || step.args[j] == r || (!is_input_ref(step.args[j]) && node_of(step.args[j]) == node_of(r));
      NodeState& producer = nodes_[node_of(r)];
      if (!repeat) {
        if (producer.consumers == 0) --sinks_;
        ++producer.consumers;
      }
    }
    ++sinks_;
    nodes_.push_back({step, key, 0});
    node_first_slot_.push_back(slots_.size());
    for (std::size_t p = 0; p < outputs.size(); ++p)
      slots_.push_back({node_ref(node, p), outputs[p], port_key(key, p), static_cast<int>(node)});
    ++graphs_by_size[nodes_.size()];
    return true;
  }

  void pop() {
    const NodeState last = nodes_.back();
    nodes_.pop_back();
    slots_.resize(node_first_slot_.back());
    node_first_slot_.pop_back();
    --sinks_;
    for (std::size_t i = 0; i < last.step.argc; ++i) {
      const TensorRef r = last.step.args[i];
      if (is_input_ref(r)) continue;
      bool repeat = false;
      for (std::size_t j = 0; j < i; ++j) repeat = repeat || (!is_input_ref(last.step.args[j]) && node_of(last.step.args[j]) == node_of(r));
      if (repeat) continue;
      NodeState& producer = nodes_[node_of(r)];
      --producer.consumers;
      if (producer.consumers == 0) ++sinks_;
    }
  }

  std::size_t final_sinks() const { return options_.two_outputs ? 2 : 1; }

  // The graph enumerated so far, in step order.
  GraphView current_graph() const {
    GraphView graph;
    for (const NodeState& n : nodes_) graph.steps.push_back(n.step);
    return graph;
  }

  // The slots of a node's output ports: [first, end).
  std::pair<std::size_t, std::size_t> port_slots(std::size_t node) const {
    const std::size_t end = node + 1 < nodes_.size() ? node_first_slot_[node + 1] : slots_.size();
    return {node_first_slot_[node], end};
  }

  void record_sink() {
    GraphView graph = current_graph();
    const auto [first, end] = port_slots(nodes_.size() - 1);
    std::vector<std::uint64_t> full(end - first);  // each port's fingerprint, computed once
    for (std::size_t p = first; p < end; ++p) {
      full[p - first] = fingerprint(slots_[p].value);
      graph.output = slots_[p].ref;
      found_views.push_back(canonical_order(graph));
      found_fingerprints.push_back(truncate_fingerprint(full[p - first], options_.fingerprint_bits));
    }
    if (!options_.two_outputs) return;
    for (std::size_t p = first; p < end; ++p)
      for (std::size_t q = first; q < end; ++q)
        if (p != q) record_pair(graph, slots_[p].ref, full[p - first], slots_[q].ref, full[q - first]);
  }

  // Two sinks: each ordered pair of their outputs.
  void record_two_sinks() {
    std::vector<std::size_t> sinks;
    for (std::size_t n = 0; n < nodes_.size(); ++n)
      if (nodes_[n].consumers == 0) sinks.push_back(n);
    const GraphView graph = current_graph();
    const auto [a_begin, a_end] = port_slots(sinks.at(0));
    const auto [b_begin, b_end] = port_slots(sinks.at(1));
    for (std::size_t p = a_begin; p < a_end; ++p) {
      const std::uint64_t fp = fingerprint(slots_[p].value);
      for (std::size_t q = b_begin; q < b_end; ++q) {
        const std::uint64_t fq = fingerprint(slots_[q].value);
        record_pair(graph, slots_[p].ref, fp, slots_[q].ref, fq);
        record_pair(graph, slots_[q].ref, fq, slots_[p].ref, fp);
      }
    }
  }

  // Records `graph` with the outputs `first` and `second`, given their full fingerprints.
  void record_pair(GraphView graph, TensorRef first, std::uint64_t first_fp, TensorRef second, std::uint64_t second_fp) {
    graph.output = first;
    graph.second = second;
    found_views.push_back(canonical_order(graph));
    found_fingerprints.push_back(truncate_fingerprint(pair_fingerprint(first_fp, second_fp), options_.fingerprint_bits));
  }

  const OpSet& ops_;
  const GeneratorOptions& options_;
  SeenGraphs& seen_;
  StepEvaluator<M> eval_;
  std::vector<Slot> slots_;
  std::vector<std::size_t> node_first_slot_;
  std::vector<NodeState> nodes_;
  std::size_t sinks_ = 0;
};

}  // namespace

Enumeration enumerate_graphs(const spec::Library& library, const OpSet& ops, const std::vector<InputTensor>& inputs,
                             const GeneratorOptions& options, const ProgressFn& progress) {
  if (options.max_ops < 1) throw LoomError("--max-ops must be at least 1");
  SeenGraphs seen;
  const std::size_t jobs = static_cast<std::size_t>(std::max(1, options.jobs));
  std::vector<std::unique_ptr<Worker>> workers;
  for (std::size_t w = 0; w < jobs; ++w) workers.push_back(std::make_unique<Worker>(library, ops, inputs, options, seen));
  const std::vector<Step> roots = workers[0]->root_steps();
  parallel_for(roots.size(), jobs, "enumerate", progress,
               [&](std::size_t worker, std::size_t item) { workers[worker]->expand_from(roots[item]); });
  workers[0]->record_inputs();

  Enumeration result;
  result.graphs_by_size.assign(static_cast<std::size_t>(options.max_ops) + 1, 0);
  for (auto& w : workers) {
    for (std::size_t i = 0; i < w->found_views.size(); ++i) {
      result.views.push_back(std::move(w->found_views[i]));
      result.fingerprints.push_back(w->found_fingerprints[i]);
    }
    for (std::size_t n = 0; n < w->graphs_by_size.size(); ++n) result.graphs_by_size[n] += w->graphs_by_size[n];
  }
  result.graphs = std::accumulate(result.graphs_by_size.begin(), result.graphs_by_size.end(), std::size_t{0});
  // A fixed order, whatever thread found which graph.
  std::vector<std::size_t> order(result.views.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<Key128> keys;
  keys.reserve(result.views.size());
  for (const auto& v : result.views) keys.push_back(view_key(v));
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (result.fingerprints[a] != result.fingerprints[b]) return result.fingerprints[a] < result.fingerprints[b];
    if (result.views[a].size() != result.views[b].size()) return result.views[a].size() < result.views[b].size();
    return keys[a] < keys[b];
  });
  Enumeration sorted;
  sorted.graphs = result.graphs;
  sorted.graphs_by_size = result.graphs_by_size;
  sorted.views.reserve(order.size());
  for (std::size_t i : order) {
    sorted.views.push_back(std::move(result.views[i]));
    sorted.fingerprints.push_back(result.fingerprints[i]);
  }
  return sorted;
}

}  // namespace loom::superopt
