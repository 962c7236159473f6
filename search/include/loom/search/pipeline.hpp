#pragma once
// Pipeline parallelism with the 1F1B schedule, applied to the whole graph as Unity's evaluation
// does: the operators fall into consecutive stages of about equal compute, each stage data
// parallel on its own block of devices; the batch runs as micro-batches, each stage doing one
// forward and one backward in turn once its pipeline is full (or, in GPipe's order, every forward
// then every backward), weight gradients summed once per iteration. An operator a schedule cuts
// into pieces in every stage (SuperScaler's interlaced pipeline) runs each piece as its data
// arrive. A plan records it as Plan::pipeline; its graph is the full-batch PCG.
#include <limits>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/graph.hpp"
#include "loom/search/cost_model.hpp"
#include "loom/search/materialize.hpp"
#include "loom/search/plan.hpp"
#include "loom/search/plan_cost.hpp"
#include "loom/search/task_graph.hpp"

namespace loom::search {

// The graph with dimension 0 (the batch) of every data input divided by `microbatches` and every
// shape derived again; nodes keep their ids, names and machine views. Throws LoomError when a
// batch does not divide or an operator rejects the smaller shapes.
pcg::Graph micro_batch_graph(const pcg::Graph& graph, const pcg::OpCatalog& catalog, int microbatches);

// Per node id, the stage of each operator: `stages` consecutive runs of the graph's compute
// operators (in creation order) of about equal time on one device; graph inputs get -1.
// With `through`, only the operators up to that node are cut into stages; later ones get -1 too.
std::vector<int> balanced_stages(const pcg::Graph& graph, const CostModel& model, int stages, pcg::NodeId through = pcg::kNoNode);

// Stages for a graph that runs its layers again on their weights (AlphaFold2's recycling passes):
// the operators up to the last that reads a weight for the first time (the first pass) cut into
// `stages` of about equal time, as balanced_stages cuts a graph; every later operator that reads a
// weight runs in the stage of that weight's first reader, and one that reads none in the earliest
// stage of its readers. Each pass then goes round the stages (pipeline_laps). Empty when no weight
// is read again after the first pass, or the first pass has too few operators for the stages.
std::vector<int> looping_stages(const pcg::Graph& graph, const CostModel& model, int stages);

// Each operator split along its batch over its stage's block of devices/stages devices (as far
// as the operator takes it), on that block.
std::vector<Placement> pipeline_placements(const spec::Library& library, const pcg::Graph& graph, const std::vector<int>& stage_of,
                                           int stages, int devices);

// Which stage a device belongs to in a plan of `stages` equal blocks.
int stage_of_device(int device, int devices, int stages);

// One training iteration of a pipelined plan: the micro-batch graph's tasks once per micro-batch,
// each stage's compute in the pipeline's order (1F1B or GPipe), weights sent out before the first
// micro-batch, each micro-batch's gradients added up on every device after its backward there (but
// the first's), and the sums after the last.
TaskGraph build_pipeline_task_graph(const pcg::Graph& plan, const CostModel& model, const Pipeline& pipeline,
                                    const pcg::OpCatalog& catalog);

// Bytes per device: weights (with gradient and optimizer state) once, activations of as many
// micro-batches as the device's stage holds at once (1F1B: stages - stage, at most all; GPipe: all).
// `recomputed`, `activations_only` and `trace` as plan_memory takes them; a pipeline's steps are of
// its micro-batch graph (micro_batch_graph), whose nodes its task graph runs.
std::vector<double> pipeline_memory(const pcg::Graph& plan, const CostModel& model, const Pipeline& pipeline, const pcg::OpCatalog& catalog,
                                    const std::vector<pcg::NodeId>& recomputed = {}, bool activations_only = false,
                                    std::vector<MemoryStep>* trace = nullptr);

struct PipelineOptions {
  std::vector<int> stage_counts;  // empty: every divisor of the device count from 2 to 8
  std::vector<int> microbatches_per_stage{1, 2, 4};
  // Per count of stages, how many moves of a boundary between stages are tried, from stages of
  // equal compute (each costs a plan's layout and its simulation); 0 keeps them equal.
  std::size_t boundary_moves = 16;
  // Boundaries are moved only for the counts of stages whose equal stages run within this factor
  // of the best equal stages (or do not fit): on the zoo's models a moved boundary gains at most
  // about 18 %.
  double moved_within = 1.2;
  // False: boundaries moved for every count of stages (moved_within ignored).
  bool bounded = true;
};

struct PipelineResult {
  Pipeline pipeline;
  std::vector<Placement> placements;                         // per node of the searched graph
  pcg::Graph plan;                                           // the graph materialized with them (full batch)
  double seconds = std::numeric_limits<double>::infinity();  // simulated; infinity when none fits
  std::vector<int> stage_sizes;                              // nodes per stage (graph inputs aside)
  // Whether the operators sharing a weight across stages (a tied embedding and LM head) are cut
  // into pieces in every stage (SuperScaler's interlaced pipeline) rather than each in its stage.
  bool interlaced = false;
  // Whether the stages follow the weights round the pipeline (looping_stages): each pass of a graph
  // that runs its layers again goes round the stages.
  bool looping = false;
  // When none was found, what stopped every pipeline tried: no count of stages, a batch that does
  // not divide into micro-batches, or the memory of the stages' devices.
  std::string none_because;
};

// The fastest pipeline of the graph over the stage and micro-batch counts tried, and the boundaries
// between stages: from stages of equal compute, each boundary moves by a step while that makes
// the pipeline faster (or, while none fits, closer to fitting); the step halves when no move pays.
PipelineResult pipeline_search(const spec::Library& library, const pcg::Graph& graph, const CostModel& model,
                               const PipelineOptions& options = {});

}  // namespace loom::search
