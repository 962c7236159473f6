#include "loom/search/joint_search.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "loom/pcg/run_concurrently.hpp"
#include "loom/search/gradient_flow.hpp"
#include "loom/search/graph_split.hpp"

namespace loom::search {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The value crossing the cut after segment k: the one port of segment k that segment k + 1
// reads, as the position in segment k's outputs and the input node of segment k + 1 standing for
// it. None when more than one value crosses.
struct CutValue {
  std::size_t output = 0;
  int input = 0;
  pcg::ParallelShape shape;
};

std::optional<CutValue> cut_value(const Segment& before, const Segment& after) {
  std::optional<CutValue> found;
  for (const auto& [name, port] : after.reads) {
    for (std::size_t k = 0; k < before.provides.size(); ++k) {
      if (before.provides[k] != port) continue;
      if (found) return std::nullopt;
      found = CutValue{k, *after.graph.find(name), after.graph.shape_of({*after.graph.find(name), 0})};
    }
  }
  return found;
}

// One searched choice for a segment given the partitioning of the values entering and leaving it.
struct SegmentChoice {
  double seconds = kInf;
  std::vector<AppliedSubstitution> sequence;
};

// The whole graph mapped as one segment of itself (split_graph), so that a recycling pass reads its
// weights as the segments do and is charged no backward; its placements taken back to `graph`.
Mapping map_whole(MachineMapper& mapper, const pcg::Graph& graph, const CostModel& model) {
  const std::vector<bool> cut_off = cut_off_from_gradients(graph, model.detached_inputs());
  if (std::none_of(cut_off.begin(), cut_off.end(), [](bool c) { return c; })) return mapper.map(graph);
  const std::vector<Segment> one = split_graph(graph, graph.size() + 1, model.trained_in(graph), model.detached_inputs());
  const Segment& whole = one.front();
  const Mapping local = mapper.map(whole.graph);
  Mapping out{unsplit_placements(graph), local.estimate};
  for (const pcg::Node& n : whole.graph.nodes()) {
    const pcg::NodeId origin = whole.origin[n.id.index()];
    if (!n.is_graph_input() || n.name == graph.node(origin).name) out.placements[origin.index()] = local.placements[n.id.index()];
  }
  return out;
}

}  // namespace

std::vector<Pin> cut_partitionings(const pcg::ParallelShape& value, const std::vector<std::int64_t>& degrees) {
  const pcg::ParallelShape whole = pcg::ParallelShape::unpartitioned(value.dims);
  std::vector<Pin> out{{whole, 0}};
  if (value.rank() == 0) return out;
  std::vector<std::size_t> dims{0};
  if (value.rank() > 1) dims.push_back(value.rank() - 1);
  for (std::size_t d : dims)
    for (std::int64_t g : degrees) {
      if (g < 2 || value.dims[d] % g != 0) continue;
      pcg::ParallelShape split = whole;
      split.D[d] = g;
      out.push_back({split, 0});
    }
  return out;
}

JointResult joint_search(const spec::Library& library, const pcg::Graph& graph, const std::vector<pcg::Rule>& rules, const CostModel& model,
                         const JointOptions& options, const std::function<void(const JointProgress&)>& progress) {
  MachineMapper mapper(library, model, options.mapping);
  std::vector<pcg::Rule> searched;
  for (const pcg::Rule& r : rules)
    if (r.category != pcg::RuleCategory::Parallel) searched.push_back(r);
  searched = pcg::both_ways(searched);
  const std::vector<std::int64_t> degrees = options.mapping.degrees.empty() ? mapping_degrees(model.machine()) : options.mapping.degrees;

  JointResult result;
  const std::vector<Segment> segments =
      split_graph(graph, options.split ? options.min_segment : graph.size() + 1, model.trained_in(graph), model.detached_inputs());
  result.segments = segments.size();

  // The cuts between segments and the partitionings searched at each (none: the value crosses
  // as its consumers want it).
  std::vector<std::optional<CutValue>> cuts;
  std::vector<std::vector<Pin>> partitionings;
  for (std::size_t k = 0; k + 1 < segments.size(); ++k) {
    cuts.push_back(cut_value(segments[k], segments[k + 1]));
    partitionings.push_back(cuts.back() ? cut_partitionings(cuts.back()->shape, degrees) : std::vector<Pin>{});
  }
  auto states = [&](std::size_t cut) { return std::max<std::size_t>(1, partitionings[cut].size()); };

  // Each segment is searched once, then costed under every partitioning of its two cuts. The
  // segments wait on nothing but their cuts' partitionings, so they are searched at once on up
  // to options.jobs threads, the calling thread with `mapper`, each other one with a cost model
  // and a mapper of its own, since their caches are not shared between threads.
  struct OwnMapper {
    OwnMapper(const spec::Library& library, const CostModel& like, const MappingOptions& options)
        : model(like.for_another_thread()), mapper(library, model, options) {}
    CostModel model;
    MachineMapper mapper;
  };
  struct ThreadCosts {
    const CostModel* model;
    MachineMapper* mapper;
  };
  struct SearchedSegment {
    SearchResult found;
    std::vector<std::vector<SegmentChoice>> choices;  // [a][b]
  };
  std::vector<SearchedSegment> searched_segments(segments.size());
  std::mutex shared;  // guards own_mappers, the progress callback and its counts
  std::vector<std::unique_ptr<OwnMapper>> own_mappers;
  std::size_t segments_done = 0, explored_done = 0, explored_shown = 0;
  const std::size_t threads =
      std::min(static_cast<std::size_t>(std::max(model.measures() ? 1 : options.jobs, 1)), std::max<std::size_t>(segments.size(), 1));
  const std::thread::id caller = std::this_thread::get_id();
  const auto began = std::chrono::steady_clock::now();
  pcg::run_concurrently(
      static_cast<int>(threads), segments.size(),
      [&] {
        if (std::this_thread::get_id() == caller) return ThreadCosts{&model, &mapper};
        auto own = std::make_unique<OwnMapper>(library, model, options.mapping);
        const ThreadCosts costs{&own->model, &own->mapper};
        const std::lock_guard<std::mutex> lock(shared);
        own_mappers.push_back(std::move(own));
        return costs;
      },
      [&](const ThreadCosts& costs, std::size_t i) {
        const std::size_t ins = i == 0 ? 1 : states(i - 1);
        const std::size_t outs = i + 1 == segments.size() ? 1 : states(i);
        SearchOptions per_segment = options.substitution;
        if (!per_segment.node_seconds)
          per_segment.node_seconds = [&costs](const pcg::Graph& g, const pcg::Node& n) { return costs.model->local_seconds(g, n); };
        if (per_segment.max_seconds > 0) {
          const double used = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
          // What is left is shared by the rounds of segments still to be searched, `threads` at a time.
          const std::size_t rounds = (segments.size() - i + threads - 1) / threads;
          per_segment.max_seconds = std::max(0.001, (options.substitution.max_seconds - used) / static_cast<double>(rounds));
        }
        // The rewrites do not depend on how the cuts are partitioned, only their costs do: the
        // segment is searched once with its cuts unpinned, and the graph found competes with the
        // segment as given under every partitioning of its two cuts.
        SearchedSegment& out = searched_segments[i];
        out.found = search_substitutions(
            segments[i].graph, searched, library, [&](const pcg::Graph& g) { return costs.mapper->map(g).estimate; }, per_segment,
            [&](const SearchStep& s) {
              if (!progress) return;
              const std::lock_guard<std::mutex> lock(shared);
              // Segments searched at once each count their own graphs: the count shown never goes back.
              explored_shown = std::max(explored_shown, explored_done + s.explored);
              progress({segments_done + 1, segments.size(), explored_shown});
            });
        std::vector<std::pair<const pcg::Graph*, const std::vector<AppliedSubstitution>*>> contenders{{&segments[i].graph, nullptr}};
        if (!out.found.sequence.empty()) contenders.push_back({&out.found.best, &out.found.sequence});
        out.choices.assign(ins, std::vector<SegmentChoice>(outs));
        for (std::size_t a = 0; a < ins; ++a)
          for (std::size_t b = 0; b < outs; ++b) {
            Pins pins;
            if (i > 0 && cuts[i - 1]) pins.inputs[cuts[i - 1]->input] = partitionings[i - 1][a];
            if (i + 1 < segments.size() && cuts[i]) pins.outputs[cuts[i]->output] = partitionings[i][b];
            SegmentChoice& c = out.choices[a][b];
            for (const auto& [contender, sequence] : contenders) {
              const double seconds = costs.mapper->map(*contender, pins).estimate;
              if (seconds < c.seconds) {
                c.seconds = seconds;
                c.sequence = sequence ? *sequence : std::vector<AppliedSubstitution>{};
              }
            }
          }
        const std::lock_guard<std::mutex> lock(shared);
        ++segments_done;
        explored_done += out.found.explored;
      });

  // Viterbi over the segments: best[b] is the least cost of segments 0..i with the cut after
  // segment i partitioned as b.
  std::vector<double> best{0};
  std::vector<std::vector<std::size_t>> came_from;  // per segment, per b: the a chosen
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const SearchedSegment& segment = searched_segments[i];
    result.explored += segment.found.explored;
    result.generated += segment.found.generated;
    result.rewrites += segment.found.rewrites;
    const std::size_t outs = segment.choices.front().size();
    std::vector<double> next(outs, kInf);
    came_from.emplace_back(outs, 0);
    for (std::size_t a = 0; a < segment.choices.size(); ++a) {
      if (best[a] == kInf) continue;
      for (std::size_t b = 0; b < outs; ++b)
        if (best[a] + segment.choices[a][b].seconds < next[b]) {
          next[b] = best[a] + segment.choices[a][b].seconds;
          came_from[i][b] = a;
        }
    }
    best = std::move(next);
  }

  // Back from the last segment: its sequence and the partitioning of each cut.
  std::vector<std::vector<AppliedSubstitution>> sequences(segments.size());
  result.cuts.assign(cuts.size(), "");
  std::size_t b = 0;
  for (std::size_t i = segments.size(); i-- > 0;) {
    const std::size_t a = came_from[i][b];
    sequences[i] = std::move(searched_segments[i].choices[a][b].sequence);
    if (i + 1 < segments.size() && cuts[i]) {
      const Pin& p = partitionings[i][b];
      result.cuts[i] = p.shape.to_string() + " on " + p.view().to_string();
    }
    b = a;
  }
  result.graph = apply_segment_sequences(graph, segments, sequences, searched, library, result.sequence);
  const Mapping mapping = map_whole(mapper, result.graph, model);
  result.placements = mapping.placements;
  result.estimate = mapping.estimate;
  result.mapping = mapper.stats();
  for (const std::unique_ptr<OwnMapper>& own : own_mappers) {
    result.mapping.solved += own->mapper.stats().solved;
    result.mapping.cache_hits += own->mapper.stats().cache_hits;
  }
  return result;
}

}  // namespace loom::search
