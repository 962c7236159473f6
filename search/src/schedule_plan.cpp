#include "loom/search/schedule_plan.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "loom/interpreter/parallel_rules.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/match.hpp"
#include "loom/pcg/rewrite.hpp"
#include "loom/search/baselines.hpp"
#include "loom/search/materialize.hpp"
#include "loom/search/pipeline.hpp"
#include "loom/search/pipeline_order.hpp"
#include "loom/search/plan_simulation.hpp"
#include "loom/search/replay.hpp"

namespace loom::search {
namespace {

using spec::ScheduleStmt;
using spec::ScheduleStmtKind;

// The index that names an operator's batch dimension, as data parallelism splits it, where its
// spec has no index of that name.
constexpr const char* kBatchIndex = "batch";

std::string join(const std::vector<std::string>& items, std::size_t at_most = 8) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < at_most; ++i) out += (i ? ", " : "") + items[i];
  if (items.size() > at_most) out += ", ... (" + std::to_string(items.size()) + " in all)";
  return out;
}

std::vector<std::string> written(const std::vector<spec::OperatorRef>& refs) {
  std::vector<std::string> out;
  for (const auto& r : refs) out.push_back(r.to_string());
  return out;
}

std::string node_name(const pcg::Node& n) { return n.name.empty() ? n.describe() : "'" + n.name + "'"; }
// The same with its operator, which describe() already names.
std::string node_and_op(const pcg::Node& n) { return n.name.empty() ? n.describe() : node_name(n) + " (op " + n.op + ")"; }

// Where each operator's pieces run, and the statement that said so.
struct Devices {
  std::vector<int> list;
  SourceLocation where;
};

class ScheduleCompiler {
 public:
  ScheduleCompiler(const spec::Library& library, const spec::ScheduleDecl& schedule, const std::vector<pcg::Rule>& rules,
                   const CostModel& model)
      : library_(library), schedule_(schedule), rules_(rules), model_(model) {}

  Plan run(const pcg::Graph& model_graph) {
    plan_.source = model_graph;
    graph_ = plan_.source;
    apply_rules();
    configs_.resize(graph_.size());
    devices_.resize(graph_.size());
    for (const pcg::Node& n : graph_.nodes()) configs_[n.id.index()] = unsplit_config(graph_, n);
    for (const ScheduleStmt& st : schedule_.stmts) place(st);
    report_refused_splits();
    check_every_piece_placed();
    check_order();
    check_stages();
    check_microbatches();
    if (!problems_.empty()) throw LoomError(std::move(problems_));
    return finish();
  }

 private:
  void problem(const SourceLocation& where, std::string message) { problems_.push_back({where, std::move(message)}); }

  // An operator the model leaves unnamed answers to OP#ID, e.g. gather_rows#4.
  static std::string schedule_name(const pcg::Node& n) { return n.name.empty() ? n.op + "#" + std::to_string(n.id.value()) : n.name; }

  static bool names(const std::string& pattern, const pcg::Node& n) {
    const std::string name = n.is_graph_input() ? n.name : schedule_name(n);
    return pattern.find_first_of("*?[") == std::string::npos ? name == pattern : fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
  }

  void no_operator(const std::string& name, const SourceLocation& where) {
    problem(where, "no operator of model '" + schedule_.model + "' is called '" + name + "'" +
                       (plan_.substitutions.empty() ? "" : " (a rule applied may have replaced it)") +
                       "; its operators: " + join(operator_names()));
  }

  // The operators `refs` name; a reference that names none is a problem at `where`.
  std::vector<pcg::NodeId> select(const std::vector<spec::OperatorRef>& refs, const SourceLocation& where) {
    std::vector<pcg::NodeId> out;
    auto add = [&](pcg::NodeId id) {
      if (std::find(out.begin(), out.end(), id) == out.end()) out.push_back(id);
    };
    for (const spec::OperatorRef& ref : refs) {
      if (ref.range) {
        select_range(ref, where, add);
        continue;
      }
      std::size_t found = 0;
      for (const pcg::Node& n : graph_.nodes()) {
        if (!names(ref.name, n)) continue;
        if (n.is_graph_input()) {
          if (ref.name == n.name) problem(where, "'" + ref.name + "' is an input or weight of the model, not an operator");
          continue;
        }
        ++found;
        add(n.id);
      }
      if (found == 0 && !graph_.find(ref.name)) no_operator(ref.name, where);
    }
    return out;
  }

  template <typename Add>
  void select_range(const spec::OperatorRef& ref, const SourceLocation& where, Add&& add) {
    std::vector<pcg::NodeId> operators;
    for (const pcg::Node& n : graph_.nodes())
      if (!n.is_graph_input()) operators.push_back(n.id);
    std::size_t first = 0, last = operators.size();  // [first, last)
    if (!ref.name.empty()) {
      const auto it = std::find_if(operators.begin(), operators.end(), [&](pcg::NodeId id) { return names(ref.name, graph_.node(id)); });
      if (it == operators.end()) return no_operator(ref.name, where);
      first = static_cast<std::size_t>(it - operators.begin());
    }
    if (!ref.last.empty()) {
      const auto it = std::find_if(operators.rbegin(), operators.rend(), [&](pcg::NodeId id) { return names(ref.last, graph_.node(id)); });
      if (it == operators.rend()) return no_operator(ref.last, where);
      last = static_cast<std::size_t>(operators.rend() - it);
    }
    if (first >= last) return problem(where, "the range " + ref.to_string() + " holds no operator: its end comes before its start");
    for (std::size_t k = first; k < last; ++k) add(operators[k]);
  }

  std::vector<std::string> operator_names() const {
    std::vector<std::string> out;
    for (const pcg::Node& n : graph_.nodes())
      if (!n.is_graph_input() && !n.name.empty()) out.push_back(n.name);
    return out;
  }

  void apply_rules() {
    bool others_seen = false;
    for (const ScheduleStmt& st : schedule_.stmts) {
      if (st.kind != ScheduleStmtKind::Apply) {
        others_seen = true;
        continue;
      }
      if (others_seen) {
        problem(st.loc, "'apply' must come before the other statements: it changes the operators they name");
        continue;
      }
      apply_rule(st);
    }
  }

  void apply_rule(const ScheduleStmt& st) {
    const auto rule = std::find_if(rules_.begin(), rules_.end(), [&](const pcg::Rule& r) { return r.id == st.rule && !r.reversed; });
    if (rule == rules_.end()) {
      problem(st.loc, "no rule '" + st.rule + "' with a valid proof among the " + std::to_string(rules_.size()) +
                          " rules given (prove it with `loom verify`, and pass its library with --rules)");
      return;
    }
    const std::size_t known = problems_.size();
    const std::vector<pcg::NodeId> at = select(st.nodes, st.loc);
    if (problems_.size() > known) return;
    const pcg::GraphIndex index(graph_);
    std::optional<pcg::Match> chosen;
    for (const pcg::Match& m : pcg::find_matches(index, *rule)) {
      const std::vector<pcg::NodeId> matched = m.matched_nodes();
      if (std::all_of(at.begin(), at.end(), [&](pcg::NodeId n) { return std::binary_search(matched.begin(), matched.end(), n); })) {
        chosen = m;
        break;
      }
    }
    if (!chosen) {
      problem(st.loc, "rule '" + st.rule + "' does not match at " + join(written(st.nodes)));
      return;
    }
    pcg::RewriteOutcome outcome = pcg::apply_match(graph_, *rule, *chosen, library_);
    if (!outcome.rewrite) {
      problem(st.loc, "rule '" + st.rule + "' cannot be applied at " + join(written(st.nodes)) + ": " + outcome.declined);
      return;
    }
    plan_.substitutions.push_back({rule->id, pcg::category_name(rule->category),
                                   rule->verification ? pcg::status_name(rule->verification->status) : "unverified", chosen->nodes, "",
                                   false});
    graph_ = std::move(outcome.rewrite->graph);
    if (st.alias.empty()) return;
    int k = 0;
    for (pcg::NodeId id : outcome.rewrite->inserted) {
      if (graph_.node(id).is_graph_input()) continue;
      const std::string name = k == 0 ? st.alias : st.alias + "." + std::to_string(k);
      try {
        graph_.set_name(id, name);
      } catch (const LoomError& e) {
        problem(st.loc, e.what());
      }
      ++k;
    }
  }

  void place(const ScheduleStmt& st) {
    switch (st.kind) {
      case ScheduleStmtKind::Apply: return;
      case ScheduleStmtKind::Split: return split_all(st);
      case ScheduleStmtKind::Assign: return assign(st, select(st.nodes, st.loc));
      case ScheduleStmtKind::Order: {
        const std::vector<pcg::NodeId> first = select(st.nodes, st.loc), then = select(st.later, st.loc);
        for (pcg::NodeId a : first)
          for (pcg::NodeId b : then) order_.push_back({a, b, st.loc});
        return;
      }
      case ScheduleStmtKind::Microbatch:
        plan_.pipeline.microbatches = static_cast<int>(st.count);
        microbatch_at_ = st.loc;
        return;
      case ScheduleStmtKind::Stages:
        plan_.pipeline.stages = static_cast<int>(st.count);
        stages_at_ = st.loc;
        return;
      case ScheduleStmtKind::Pipeline: plan_.pipeline.order = st.order == "gpipe" ? PipelineOrder::GPipe : PipelineOrder::OneFOneB; return;
      case ScheduleStmtKind::Recompute:
        for (pcg::NodeId id : select(st.nodes, st.loc))
          if (std::find(recompute_.begin(), recompute_.end(), id) == recompute_.end()) recompute_.push_back(id);
        return;
    }
  }

  // A split refused is a problem, except for an operator a pattern or a range picked (a pattern cuts
  // many operators, and another statement cuts some of them another way) when another statement of
  // the schedule splits it, if some operator of the statement took the split: the operator keeps
  // the last split it took, with its devices.
  void split_all(const ScheduleStmt& st) {
    const std::vector<pcg::NodeId> targets = select(st.nodes, st.loc);
    std::set<pcg::NodeId> named;
    for (const spec::OperatorRef& ref : st.nodes)
      if (!ref.range && ref.name.find_first_of("*?[") == std::string::npos)
        for (const pcg::Node& n : graph_.nodes())
          if (!n.is_graph_input() && names(ref.name, n)) named.insert(n.id);
    std::vector<pcg::NodeId> placed;
    std::vector<std::pair<pcg::NodeId, std::vector<Diagnostic>>> refusals;
    for (pcg::NodeId id : targets) {
      const std::size_t before = problems_.size();
      split_as_written(id, st);
      if (problems_.size() == before) {
        split_taken_.insert(id);
        refused_splits_.erase(id);
        placed.push_back(id);
        continue;
      }
      refusals.emplace_back(id, std::vector<Diagnostic>(problems_.begin() + static_cast<std::ptrdiff_t>(before), problems_.end()));
      problems_.resize(before);
    }
    const bool some_took_it = !placed.empty();
    for (auto& [id, refused] : refusals) {
      if (some_took_it && !named.count(id) && split_taken_.count(id)) continue;  // keeps its earlier split and devices
      const bool forgivable = some_took_it && !named.count(id);
      std::vector<Diagnostic>& kept = forgivable ? refused_splits_[id] : problems_;
      kept.insert(kept.end(), refused.begin(), refused.end());
      if (!forgivable) unsplittable_.insert(id);
      placed.push_back(id);
    }
    if (!st.devices.empty()) assign(st, placed);
  }

  void report_refused_splits() {
    for (auto& [id, refused] : refused_splits_)
      for (Diagnostic& d : refused) problems_.push_back(std::move(d));
  }

  void split_as_written(pcg::NodeId id, const ScheduleStmt& st) {
    const pcg::Node& n = graph_.node(id);
    const spec::OpDecl* op = library_.find_op(n.op);
    if (!op) {
      problem(st.loc, node_name(n) + " runs '" + n.op + "', which moves data and is not split");
      return;
    }
    ParallelConfig config = unsplit_config(graph_, n);
    std::vector<std::vector<std::int64_t>> dims;
    for (const auto& s : config.inputs) dims.push_back(s.dims);
    const spec::Program program = library_.instantiate(n.op, n.attrs, dims);
    const std::vector<std::vector<std::string>> indices = spec::input_index_names(*op, dims);
    std::vector<std::string> described;
    for (const spec::IndexSplit& s : st.splits) {
      if (std::count_if(st.splits.begin(), st.splits.end(), [&](const spec::IndexSplit& o) { return o.index == s.index; }) > 1) {
        problem(s.loc, "index '" + s.index + "' is split twice: give its degree once");
        return;
      }
      std::optional<std::pair<std::size_t, std::size_t>> at;  // (input, dimension) read through the index
      for (std::size_t i = 0; i < indices.size() && !at; ++i)
        for (std::size_t d = 0; d < indices[i].size() && !at; ++d)
          if (indices[i][d] == s.index) at = {i, d};
      if (!at && s.index == kBatchIndex && indices.size() > BatchDimension::input &&
          indices[BatchDimension::input].size() > BatchDimension::dim)
        at = {BatchDimension::input, BatchDimension::dim};
      if (!at) {
        std::set<std::string> known;
        for (const auto& input : indices)
          for (const auto& name : input)
            if (!name.empty()) known.insert(name);
        problem(s.loc, node_and_op(n) + " reads its inputs through no index '" + s.index +
                           "'; its indices: " + join({known.begin(), known.end()}) +
                           (s.index == kBatchIndex ? std::string(" (it has no input with a dimension to take as its batch)")
                                                   : std::string(", and ") + kBatchIndex +
                                                         " (its first input's first dimension, as data parallelism splits it)"));
        return;
      }
      const auto [i, dim] = *at;
      if (dims[i][dim] % s.degree != 0) {
        problem(s.loc, node_name(n) + ": index '" + s.index + "' runs over " + std::to_string(dims[i][dim]) +
                           ", which does not divide into " + std::to_string(s.degree));
        return;
      }
      const std::vector<pcg::ParallelShape> parts = spec::split_inputs(program, i, dim, s.degree);
      for (std::size_t k = 0; k < config.inputs.size(); ++k) {
        for (std::size_t d = 0; d < config.inputs[k].D.size(); ++d) config.inputs[k].D[d] *= parts[k].D[d];
        config.inputs[k].V *= parts[k].V;
        config.inputs[k].R *= parts[k].R;
      }
      described.push_back(s.index + "/" + std::to_string(s.degree));
    }
    try {
      config.outputs = library_.infer(n.op, n.attrs, config.inputs);
    } catch (const LoomError& e) {
      problem(st.loc, node_and_op(n) + " cannot be split by " + join(described) + ": " + e.what());
      return;
    }
    config.split = join(described);
    configs_[id.index()] = std::move(config);
  }

  void assign(const ScheduleStmt& st, const std::vector<pcg::NodeId>& targets) {
    const int machine_devices = model_.machine().devices();
    for (int d : st.devices)
      if (d >= machine_devices) {
        problem(st.loc, "device " + std::to_string(d) + " is not on the machine: " + model_.machine().name + " has devices 0.." +
                            std::to_string(machine_devices - 1) + " (--nodes and --gpus-per-node give it more)");
        return;
      }
    for (pcg::NodeId id : targets) devices_[id.index()] = Devices{st.devices, st.loc};
  }

  void check_every_piece_placed() {
    std::vector<std::string> unplaced;
    for (const pcg::Node& n : graph_.nodes()) {
      if (n.is_graph_input()) continue;
      const std::optional<Devices>& d = devices_[n.id.index()];
      const std::int64_t pieces = configs_[n.id.index()].tasks();
      if (!d) {
        unplaced.push_back(node_name(n) + (pieces > 1 ? " (" + std::to_string(pieces) + " pieces)" : ""));
      } else if (static_cast<std::int64_t>(d->list.size()) != pieces && !refused_splits_.count(n.id) && !unsplittable_.count(n.id)) {
        problem(d->where, node_name(n) + " runs as " + std::to_string(pieces) + " piece(s), but " + std::to_string(d->list.size()) +
                              " device(s) are given for it: give one device per piece, in piece order");
      }
    }
    if (!unplaced.empty())
      problem(schedule_.loc, "every piece needs a device, and " + std::to_string(unplaced.size()) + " operator(s) have none: " +
                                 join(unplaced) + " (`assign NAME to DEVICES`; `assign \"*\" to 0` places every operator first)");
  }

  struct Ordered {
    pcg::NodeId before, after;
    SourceLocation where;
  };

  // Data edges and order edges together must leave the operators acyclic: a cycle is a deadlock.
  void check_order() {
    if (order_.empty()) return;
    const std::size_t count = graph_.size();
    std::vector<std::vector<std::pair<pcg::NodeId, const Ordered*>>> next(count);  // null: a data edge
    for (const pcg::Node& n : graph_.nodes())
      for (pcg::PortRef in : n.inputs) next[in.node.index()].push_back({n.id, nullptr});
    for (const Ordered& o : order_) next[o.before.index()].push_back({o.after, &o});
    enum Color { White, Grey, Black };
    std::vector<Color> color(count, White);
    // Depth first, with an explicit stack (a model may be deep): `path` holds each node on it and
    // the edge that reached it, `cursor` how many of that node's edges have been followed.
    std::vector<std::pair<pcg::NodeId, const Ordered*>> path;
    std::vector<std::size_t> cursor;
    for (const pcg::Node& n : graph_.nodes()) {
      if (color[n.id.index()] != White) continue;
      path.assign(1, {n.id, nullptr});
      cursor.assign(1, 0);
      color[n.id.index()] = Grey;
      while (!path.empty()) {
        const pcg::NodeId at = path.back().first;
        if (cursor.back() == next[at.index()].size()) {
          color[at.index()] = Black;
          path.pop_back();
          cursor.pop_back();
          continue;
        }
        const auto [to, how] = next[at.index()][cursor.back()++];
        if (color[to.index()] == Grey) return report_cycle(path, to, how);
        if (color[to.index()] == White) {
          color[to.index()] = Grey;
          path.push_back({to, how});
          cursor.push_back(0);
        }
      }
    }
  }

  void report_cycle(const std::vector<std::pair<pcg::NodeId, const Ordered*>>& path, pcg::NodeId first, const Ordered* closing) {
    std::size_t start = 0;
    while (path[start].first != first) ++start;
    std::ostringstream os;
    os << "deadlock: these operators wait for each other in a cycle: " << node_name(graph_.node(first));
    const Ordered* located = closing;
    auto step = [&](pcg::NodeId to, const Ordered* how) {
      os << " -> " << node_name(graph_.node(to)) << (how ? " (ordered at " + how->where.to_string() + ")" : " (reads its output)");
      if (how && !located) located = how;
    };
    for (std::size_t k = start + 1; k < path.size(); ++k) step(path[k].first, path[k].second);
    step(first, closing);
    problem(located ? located->where : schedule_.loc, os.str());
  }

  void check_stages() {
    const int stages = plan_.pipeline.stages, devices = model_.machine().devices();
    if (stages <= 1) return;
    if (devices % stages != 0) {
      problem(stages_at_, std::to_string(stages) + " stages do not divide the machine's " + std::to_string(devices) + " devices");
      return;
    }
    std::vector<int> stage(graph_.size(), -1);
    for (const pcg::Node& n : graph_.nodes()) {
      const std::optional<Devices>& d = devices_[n.id.index()];
      if (n.is_graph_input() || !d || d->list.empty()) continue;
      std::set<int> in;
      for (int device : d->list) in.insert(stage_of_device(device, devices, stages));
      if (static_cast<int>(in.size()) == stages) continue;  // interlaced: every stage runs a piece of it in turn
      if (in.size() > 1) {
        problem(d->where, node_name(n) + " has pieces in " + std::to_string(in.size()) + " of the " + std::to_string(stages) +
                              " stages: each stage is a block of " + std::to_string(devices / stages) +
                              " devices, and an operator runs within one stage, or has pieces in every stage (interlaced)");
        continue;
      }
      stage[n.id.index()] = *in.begin();
    }
    // Data that goes back to an earlier stage starts a lap round the stages (a recycling pass).
    const std::vector<int> lap = laps_of_stages(graph_, stage);
    const auto when = [&](pcg::NodeId id) { return std::pair{lap[id.index()], stage[id.index()]}; };
    for (const Ordered& o : order_)
      if (when(o.before) > when(o.after))
        problem(o.where, node_name(graph_.node(o.before)) + " is ordered before " + node_name(graph_.node(o.after)) +
                             ", which runs earlier round the stages (lap " + std::to_string(lap[o.after.index()]) + ", stage " +
                             std::to_string(stage[o.after.index()]) + "): stages run in turn");
  }

  void check_microbatches() {
    if (plan_.pipeline.microbatches <= 1) return;
    try {
      micro_batch_graph(graph_, library_, plan_.pipeline.microbatches);
    } catch (const LoomError& e) {
      problem(microbatch_at_, std::to_string(plan_.pipeline.microbatches) + " micro-batches do not fit: " + e.what());
    }
  }

  void name_if_unnamed(pcg::NodeId id) {
    if (graph_.node(id).name.empty()) graph_.set_name(id, schedule_name(graph_.node(id)));
  }

  Plan finish() {
    std::vector<Placement> placements;
    for (const pcg::Node& n : graph_.nodes()) {
      Placement p{configs_[n.id.index()], 0, {}};
      if (const auto& d = devices_[n.id.index()]) p.devices = d->list;
      placements.push_back(std::move(p));
    }
    // Order and recomputation are recorded by name: an unnamed operator they take gets one.
    for (pcg::NodeId id : recompute_) name_if_unnamed(id);
    for (const Ordered& o : order_) {
      name_if_unnamed(o.before);
      name_if_unnamed(o.after);
    }
    plan_.model = schedule_.model;
    plan_.machine = model_.machine();
    plan_.graph = materialize(graph_, placements, library_, model_.moves());
    plan_.schedule = schedule_.name + " (" + schedule_.loc.to_string() + ")";
    auto in_plan = [&](pcg::NodeId id) { return *plan_.graph.find(graph_.node(id).name); };  // materialize keeps names
    for (const Ordered& o : order_) plan_.order.push_back({in_plan(o.before), in_plan(o.after)});
    for (pcg::NodeId id : recompute_) plan_.recompute.push_back(in_plan(id));
    run_order_in_graph(plan_);
    plan_.rules = rules_used(rules_, plan_.substitutions);
    plan_.iteration_seconds = simulated_plan_cost(plan_, model_, library_).seconds;
    return std::move(plan_);
  }

  const spec::Library& library_;
  const spec::ScheduleDecl& schedule_;
  const std::vector<pcg::Rule>& rules_;
  const CostModel& model_;
  std::vector<Diagnostic> problems_;
  Plan plan_;
  pcg::Graph graph_;
  std::vector<ParallelConfig> configs_;
  std::vector<std::optional<Devices>> devices_;
  std::vector<Ordered> order_;
  std::vector<pcg::NodeId> recompute_;
  std::map<pcg::NodeId, std::vector<Diagnostic>> refused_splits_;  // by operator: its devices go unchecked
  std::set<pcg::NodeId> split_taken_, unsplittable_;               // operators that took a split; those refused and reported
  SourceLocation microbatch_at_, stages_at_;
};

}  // namespace

Plan plan_from_schedule(const spec::Library& library, const spec::ScheduleDecl& schedule, const pcg::Graph& model_graph,
                        const std::vector<pcg::Rule>& rules, const CostModel& model) {
  return ScheduleCompiler(library, schedule, rules, model).run(model_graph);
}

}  // namespace loom::search
