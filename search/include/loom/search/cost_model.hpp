#pragma once
// Time and memory of one task of an operator on one device of a machine: a roofline over the
// FLOPs and bytes derived from the operator's spec, replaced by a measured figure where the
// profile database has one, or where a measurer can run the task on a device of this kind.
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/search/gradient_flow.hpp"
#include "loom/search/machine.hpp"
#include "loom/search/output_loss.hpp"
#include "loom/search/profile_db.hpp"
#include "loom/search/rvd_search.hpp"
#include "loom/search/task_measurer.hpp"

namespace loom::search {

// A task's time at its device's peak: the larger of its arithmetic at peak_flops and its bytes at
// memory bandwidth, for the forward and for the gradient (its arithmetic as the spec derives it,
// pcg::TaskCost::backward_flops; twice the forward's bytes), before the achieved fraction of its
// kernel shape and the kernel overheads. Beside it, outside the achieved fraction: one pass of
// unfolding a convolution's windows (pcg::TaskCost::unfolded_elements at the device's
// unfolding_bandwidth; 0 on a device whose kernels do not unfold them), which the forward makes
// once and the backward once for each of the product's operands taking a gradient (unfolding again
// for the weight's, folding back for the input's).
struct Roofline {
  double forward = 0, backward = 0;
  double unfolding = 0;
};
Roofline bare_roofline(const pcg::TaskCost& cost, const DeviceSpec& device);
// The passes of unfolding a task's backward makes: one per factor of the unfolded product
// (pcg::TaskCost::unfolding_inputs) taking a gradient (`gradients` as CostModel::compute takes
// them, empty: every input).
int backward_unfoldings(std::uint64_t unfolding_inputs, const std::vector<bool>& gradients);

struct TaskEstimate {
  double seconds = 0;
  // The task's backward: measured where the profile database has it; otherwise the roofline of the
  // derived gradient, or, for a forward measured alone, the forward scaled as that roofline is.
  double backward_seconds = 0;
  double flops = 0;
  double bytes = 0;       // read plus written
  bool measured = false;  // from the profile database
};

class CostModel {
 public:
  // `optimizer`: the step that updates the weights after each backward pass, "sgd" or "adam";
  // throws LoomError naming any other.
  CostModel(const spec::Library& library, const Machine& machine, const ProfileDatabase* profiles = nullptr, std::string optimizer = "sgd");
  // Operator tasks neither `profiles` nor `measuring`'s database holds are measured by it the first
  // time they are costed, where its measurer runs this machine's device kind; the figures go to
  // its database. Copies of the model (on()) share it.
  CostModel(const spec::Library& library, const Machine& machine, std::shared_ptr<MeasuringProfiles> measuring,
            std::string optimizer = "sgd");

  // One task of an operator node. Parallelization operators, fused forms and graph inputs run no
  // kernel: what they cost is communication.
  TaskEstimate compute(const pcg::Graph& graph, const pcg::Node& node) const;
  // The same for the node reading inputs of the given parallel shapes (a split the node may take);
  // `gradients`: which inputs take a gradient (inputs_taking_gradients; empty: all).
  TaskEstimate compute(const pcg::Node& node, const std::vector<pcg::ParallelShape>& inputs, const std::vector<bool>& gradients = {}) const;

  // One piece's work on its device in a layout change, outside the messages and collectives,
  // where the profile database has it (layout_change_key) or, measuring, the measurer gives it;
  // otherwise none (the task graph then charges the bytes the change copies and adds up). Its
  // backward is the forward's where only the forward was measured: the gradient moves the same
  // boxes back.
  std::optional<TaskEstimate> measured_layout_change(const LayoutChangeTask& change) const;

  // The optimizer step over `box` (its extent) of a weight of dims `whole` on one device: measured
  // where the profile database has it (weight_update_key), otherwise the bytes the step reads and
  // writes at memory bandwidth (no launch cost: the task graph adds one per device); either slowed
  // by the device's busy_node_slowdown as compute() says.
  TaskEstimate weight_update(const std::vector<std::int64_t>& box, const std::vector<std::int64_t>& whole) const;

  // Adding one micro-batch's gradient of a weight of dims `whole` into the sum of the micro-batches
  // before it, on one device (a pipeline's step; the runtime adds whole gradients): measured where
  // the profile database has it (gradient_accumulation_key), otherwise the bytes it reads and
  // writes at memory bandwidth; either slowed as compute() says.
  TaskEstimate gradient_accumulation(const std::vector<std::int64_t>& whole) const;

  // The loss of one piece of extent `box` of the graph's output of dims `whole` and its gradient,
  // on one device, the loss being this model's (take_loss): measured where the profile database
  // has it (loss_key), otherwise the passes it makes over the piece at memory bandwidth; either
  // slowed as compute() says.
  TaskEstimate loss_piece(const std::vector<std::int64_t>& box, const std::vector<std::int64_t>& whole, bool probabilities,
                          bool rows_shared) const;

  // A quick estimate of a node's whole cost on one device, forward and backward, for ranking
  // rewrites before they are costed in full: compute() for an operator; for a parallelization
  // operator or fused form, the bytes it reads and writes at memory bandwidth, as if they stayed on
  // the device; for an operator the graph cuts off from the gradients (a recycling pass), its
  // forward alone. Zero for a graph input.
  double local_seconds(const pcg::Graph& graph, const pcg::Node& node) const;

  // Weights the run keeps fixed besides those their readers' specs note `@statistic` or `@index`
  // (an imported model's constants): they take no gradient, sum or optimizer state.
  void keep_fixed(std::set<std::string> weights) { fixed_ = std::make_shared<const std::set<std::string>>(std::move(weights)); }
  // The loss training will take (cross-entropy unless told).
  void take_loss(LossKind loss) { loss_ = loss; }
  LossKind loss() const { return loss_; }
  // Whether training updates weight node `node` of `graph` (spec::trained_weight, and not kept
  // fixed). Known by the weight's name once asked: the graphs one model costs are rewrites of one
  // model, which keep the operator that reads a weight.
  bool trains(const pcg::Graph& graph, const pcg::Node& node) const;
  // trains() over the weights of `graph`, which must outlive what it returns.
  TrainedWeight trained_in(const pcg::Graph& graph) const {
    return [this, &graph](const pcg::Node& w) { return trains(graph, w); };
  }
  // Per input of `node`, whether its gradient is computed (inputs_taking_gradients over the
  // weights this model trains and the inputs its specs detach).
  std::vector<bool> gradient_inputs(const pcg::Graph& graph, const pcg::Node& node) const;
  // The inputs the library's specs note `@detached` (spec::detached_input); none asked where no
  // operator of the library detaches one.
  DetachedInput detached_inputs() const;
  // Per node, whether its values take a gradient (values_taking_gradients over the weights this
  // model trains and the inputs its specs detach): a node whose values take none runs no backward.
  std::vector<bool> gradient_values(const pcg::Graph& graph) const;

  // Whether the node runs a kernel (an operator of the library), rather than moving data.
  bool is_compute(const pcg::Node& node) const { return !node.is_graph_input() && library_.find_op(node.op) != nullptr; }

  const Machine& machine() const { return machine_; }
  const spec::Library& library() const { return library_; }
  // Whether costing a task may measure it (and so write to the shared profile database).
  bool measures() const { return measuring_ != nullptr; }
  // How values move between parallel shapes on the machine: one search, and its cache, shared by
  // the copies of this model (not by the models on() makes, which search anew). The cache is not
  // locked: threads costing at once each need a model of their own, made by for_another_thread().
  const RvdSearch& moves() const { return *moves_; }
  // The same model (library, profiles, optimizer) on another machine, with a search of layout
  // moves of its own.
  CostModel on(const Machine& machine) const {
    CostModel model(library_, machine, profiles_, optimizer_);
    model.measuring_ = measuring_;
    model.fixed_ = fixed_;
    model.loss_ = loss_;
    return model;
  }
  // The same model with caches of its own, for a thread costing beside the one using this model.
  // Measuring is not locked: where the model measures tasks, callers cost on one thread.
  CostModel for_another_thread() const { return on(machine()); }

 private:
  // The factor a figure measured alone (or the roofline: `measured_alone` true) takes on this
  // machine: the device's busy_node_slowdown where a node has several devices, else 1.
  double alone_to_busy(bool measured_alone) const;
  // A task that moves `bytes` through memory: measured (`measure`, given the roofline, where this
  // model measures; else its `key` in the profile database), otherwise the bytes at memory
  // bandwidth; either slowed as compute() says.
  TaskEstimate memory_task(double bytes, const std::function<ProfileKey()>& key,
                           const std::function<const ProfileEntry*(double roofline)>& measure) const;

  const spec::Library& library_;
  Machine machine_;  // by value: a model may be made from a machine built on the spot
  const ProfileDatabase* profiles_;
  std::shared_ptr<MeasuringProfiles> measuring_;
  std::string optimizer_;
  double update_bytes_per_element_ = 0;
  std::shared_ptr<const RvdSearch> moves_;
  bool detaches_ = false;  // some operator of the library notes an input `@detached`
  std::shared_ptr<const std::set<std::string>> fixed_;
  LossKind loss_ = LossKind::CrossEntropy;
  std::shared_ptr<std::unordered_map<std::string, bool>> trained_;  // by weight name, as trains() found it
};

}  // namespace loom::search
