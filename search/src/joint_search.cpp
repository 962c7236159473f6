#include "loom/search/joint_search.hpp"

#include <chrono>

#include "loom/search/graph_split.hpp"

namespace loom::search {

JointResult joint_search(const spec::Library& library, const pcg::Graph& graph, const std::vector<pcg::Rule>& rules,
                         const CostModel& model, const JointOptions& options,
                         const std::function<void(const JointProgress&)>& progress) {
  MachineMapper mapper(library, model, options.mapping);
  std::vector<pcg::Rule> searched;
  for (const pcg::Rule& r : rules)
    if (r.category != pcg::RuleCategory::Parallel) searched.push_back(r);

  JointResult result;
  std::vector<Segment> segments = split_graph(graph, options.split ? options.min_segment : graph.size() + 1);
  result.segments = segments.size();
  const auto began = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < segments.size(); ++i) {
    SearchOptions per_segment = options.substitution;
    if (per_segment.max_seconds > 0) {
      const double used = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      per_segment.max_seconds = std::max(0.001, (options.substitution.max_seconds - used) / static_cast<double>(segments.size() - i));
    }
    auto cost = [&](const pcg::Graph& g) { return mapper.map(g).estimate; };
    SearchResult found = search_substitutions(segments[i].graph, searched, library, cost, per_segment, [&](const SearchStep& s) {
      if (progress) progress({i + 1, segments.size(), result.explored + s.explored});
    });
    result.explored += found.explored;
    result.generated += found.generated;
    result.sequence.insert(result.sequence.end(), found.sequence.begin(), found.sequence.end());
    segments[i].graph = std::move(found.best);
  }
  result.graph = segments.size() == 1 && result.sequence.empty() ? graph : join_segments(graph, segments);
  const Mapping mapping = mapper.map(result.graph);
  result.placements = mapping.placements;
  result.estimate = mapping.estimate;
  result.mapping = mapper.stats();
  return result;
}

}  // namespace loom::search
