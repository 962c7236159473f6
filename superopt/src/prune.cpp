#include "loom/superopt/prune.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

#include "loom/pcg/union_find.hpp"
#include "loom/superopt/fingerprint.hpp"
#include "loom/superopt/hash.hpp"
#include "loom/superopt/step_eval.hpp"
#include "parallel.hpp"

namespace loom::superopt {
namespace {

using M = spec::ModularDomain;
using MValue = Value<spec::ModularValue>;

constexpr std::size_t kMaxRenamings = 720;

// What pruning needs to know about one candidate graph.
struct ViewInfo {
  std::vector<Key128> node_keys;
  std::vector<Key128> renamed;                           // the view's key under each renaming
  std::vector<std::vector<std::size_t>> renamed_inputs;  // the inputs it reads under each renaming, ascending
  std::vector<std::size_t> appearance;                   // the inputs it reads in the order the text shows them
  // Two outputs: the same with the outputs swapped, which is the same rule when both sides swap.
  std::vector<Key128> swapped_renamed;
  std::vector<std::size_t> swapped_appearance;
  std::vector<std::uint64_t> root_args;  // full fingerprints of the output node's arguments
  bool unused_computation = false;       // some operator's values never reach the output
  bool outputs_apart = false;            // two outputs, and no operator serves both
  int apart_instance = -1;               // two outputs apart, computed last by the same operator instance
  bool non_minimal_output = false;       // two outputs, one of which a smaller graph computes
  bool non_minimal_part = false;         // some inner tensor has a smaller (or canonical) equivalent graph
};

// The graph inputs in the order a rule's text shows them.
std::vector<std::size_t> appearance_order(const GraphView& view) {
  std::vector<std::size_t> order;
  auto visit = [&](auto&& self, TensorRef r) -> void {
    if (is_input_ref(r)) {
      if (std::find(order.begin(), order.end(), input_of(r)) == order.end()) order.push_back(input_of(r));
      return;
    }
    const Step& s = view.steps[node_of(r)];
    for (std::size_t i = 0; i < s.argc; ++i) self(self, s.args[i]);
  };
  for (TensorRef r : view.outputs()) visit(visit, r);
  return order;
}

// Whether some operator is computed for both outputs of a graph with two.
bool outputs_share_an_operator(const GraphView& view) {
  auto reached = [&](TensorRef out) {
    std::vector<bool> seen(view.steps.size(), false);
    auto visit = [&](auto&& self, TensorRef r) -> void {
      if (is_input_ref(r) || seen[node_of(r)]) return;
      seen[node_of(r)] = true;
      const Step& s = view.steps[node_of(r)];
      for (std::size_t i = 0; i < s.argc; ++i) self(self, s.args[i]);
    };
    visit(visit, out);
    return seen;
  };
  const auto first = reached(view.output), second = reached(view.second);
  for (std::size_t n = 0; n < view.steps.size(); ++n)
    if (first[n] && second[n]) return true;
  return false;
}

// The smallest enumerated graph of each fingerprint: the first of its run (views are sorted by
// fingerprint, size and key).
struct Representative {
  std::size_t size = 0;
  Key128 key;
};

class Describer {
 public:
  Describer(const spec::Library& library, const OpSet& ops, const std::vector<InputTensor>& inputs, const GeneratorOptions& options,
            const std::vector<std::vector<std::size_t>>& renamings, const std::unordered_map<std::uint64_t, Representative>& smallest)
      : eval_(library, ops),
        inputs_(modular_inputs(eval_, inputs, options.seed)),
        options_(options),
        renamings_(renamings),
        smallest_(smallest) {}

  ViewInfo describe(const GraphView& view) {
    ViewInfo info;
    info.node_keys = node_keys(view);
    const auto used = used_inputs(view);
    info.appearance = appearance_order(view);
    GraphView swapped = view;
    std::swap(swapped.output, swapped.second);
    if (view.has_two_outputs()) info.swapped_appearance = appearance_order(swapped);
    for (const auto& r : renamings_) {
      info.renamed.push_back(view_key(view, &r));
      if (view.has_two_outputs()) info.swapped_renamed.push_back(view_key(swapped, &r));
      std::vector<std::size_t> inputs;
      for (std::size_t i : used) inputs.push_back(r[i]);
      std::sort(inputs.begin(), inputs.end());
      info.renamed_inputs.push_back(std::move(inputs));
    }
    if (is_input_ref(view.output) && !view.has_two_outputs()) return info;
    const auto ports = eval_.run(view, inputs_);
    if (!view.has_two_outputs()) {
      const Step& root = view.steps[node_of(view.output)];
      for (std::size_t i = 0; i < root.argc; ++i) info.root_args.push_back(fingerprint(value_of(root.args[i], ports)));
    }
    info.unused_computation = has_unused_computation(view, ports);
    info.outputs_apart = view.has_two_outputs() && !outputs_share_an_operator(view);
    if (info.outputs_apart && !is_input_ref(view.output) && !is_input_ref(view.second) &&
        view.steps[node_of(view.output)].inst == view.steps[node_of(view.second)].inst)
      info.apart_instance = view.steps[node_of(view.output)].inst;
    if (options_.prune_implied) {
      info.non_minimal_part = has_non_minimal_part(view, ports);
      if (view.has_two_outputs()) info.non_minimal_output = !is_minimal(view, view.output, ports) || !is_minimal(view, view.second, ports);
    }
    return info;
  }

 private:
  const MValue& value_of(TensorRef r, const std::vector<std::vector<MValue>>& ports) const {
    return is_input_ref(r) ? inputs_[input_of(r)] : ports[node_of(r)][port_of(r)];
  }

  // Each operator's outputs in turn are replaced by fresh random values; if the outputs stay
  // the same, that operator computes nothing the outputs need.
  bool has_unused_computation(const GraphView& view, const std::vector<std::vector<MValue>>& ports) {
    const std::vector<TensorRef> outputs = view.outputs();
    auto fingerprints = [&](const std::vector<std::vector<MValue>>& values) {
      std::vector<std::uint64_t> out;
      for (TensorRef r : outputs) out.push_back(fingerprint(is_input_ref(r) ? inputs_[input_of(r)] : values[node_of(r)][port_of(r)]));
      return out;
    };
    const std::vector<std::uint64_t> expected = fingerprints(ports);
    for (std::size_t n = 0; n < view.steps.size(); ++n) {
      if (std::any_of(outputs.begin(), outputs.end(), [&](TensorRef r) { return !is_input_ref(r) && node_of(r) == n; })) continue;
      std::vector<InputTensor> shapes;
      for (const auto& p : ports[n]) shapes.push_back({"", *p.shape});
      const std::pair<std::size_t, std::vector<MValue>> replaced{n,
                                                                 modular_inputs(eval_, shapes, hash_combine(options_.seed, n + 0xDEADULL))};
      if (fingerprints(eval_.run(view, inputs_, &replaced)) == expected) return true;
    }
    return false;
  }

  // Whether an inner tensor (not an output) is computed by a graph that is not the smallest
  // enumerated graph of its fingerprint: the pair then follows from the pair that replaces it.
  // The outputs of a graph with two are not parts: each alone may well have a smaller graph, as
  // the two outputs of a merge do, and sharing their computation is the rule's point.
  bool has_non_minimal_part(const GraphView& view, const std::vector<std::vector<MValue>>& ports) const {
    for (const Step& s : view.steps)
      for (std::size_t i = 0; i < s.argc; ++i)
        if (!is_input_ref(s.args[i]) && !is_minimal(view, s.args[i], ports)) return true;
    return false;
  }

  // Whether the graph computing tensor `r` of `view` is the smallest enumerated graph of its
  // fingerprint (or, among equally small ones, the one with the least key).
  bool is_minimal(const GraphView& view, TensorRef r, const std::vector<std::vector<MValue>>& ports) const {
    GraphView part;
    part.steps = view.steps;
    part.output = r;
    part = canonical_order(part);
    const std::uint64_t fp = truncate_fingerprint(fingerprint(value_of(r, ports)), options_.fingerprint_bits);
    auto it = smallest_.find(fp);
    if (it == smallest_.end()) return true;
    return !(std::tuple{it->second.size, it->second.key} < std::tuple{part.size(), view_key(part)});
  }

  StepEvaluator<M> eval_;
  std::vector<MValue> inputs_;
  const GeneratorOptions& options_;
  const std::vector<std::vector<std::size_t>>& renamings_;
  const std::unordered_map<std::uint64_t, Representative>& smallest_;
};

// A rule with two outputs is worth having as a merge: one side computes its outputs apart, each
// last by the same operator instance, and the other shares computation between them and applies
// that instance fewer times. Any other pair with two outputs follows from rules of one output.
bool is_merge(const GraphView& va, const ViewInfo& a, const GraphView& vb, const ViewInfo& b) {
  auto merges = [](const GraphView& apart, const ViewInfo& info, const GraphView& merged, const ViewInfo& merged_info) {
    if (info.apart_instance < 0 || merged_info.outputs_apart) return false;
    const auto inst = static_cast<std::uint16_t>(info.apart_instance);
    auto is_inst = [&](std::uint16_t i) { return i == inst; };
    return count_steps(merged, is_inst) < count_steps(apart, is_inst);
  };
  return merges(va, a, vb, b) || merges(vb, b, va, a);
}

bool share_an_input_subgraph(const ViewInfo& a, const ViewInfo& b) {
  for (const Key128& k : a.node_keys)
    if (std::find(b.node_keys.begin(), b.node_keys.end(), k) != b.node_keys.end()) return true;
  return false;
}

bool share_the_output_operator(const GraphView& a, const ViewInfo& ia, const GraphView& b, const ViewInfo& ib) {
  if (a.has_two_outputs() || b.has_two_outputs() || is_input_ref(a.output) || is_input_ref(b.output)) return false;
  const Step& ra = a.steps[node_of(a.output)];
  const Step& rb = b.steps[node_of(b.output)];
  return ra.inst == rb.inst && port_of(a.output) == port_of(b.output) && ia.root_args == ib.root_args;
}

// Whether the pair is the representative of its class under input renaming: the one reading the
// earliest inputs, in the order its text shows them (rewritten side first), then the one with the
// smallest keys.
bool canonical_under_renaming(const GraphView& va, const ViewInfo& a, const GraphView& vb, const ViewInfo& b, const OpSet& ops,
                              const std::vector<std::vector<std::size_t>>& renamings) {
  const bool a_first = rewrites_from(va, vb, ops), b_first = rewrites_from(vb, va, ops);
  const bool two_outputs = va.has_two_outputs() && vb.has_two_outputs();
  auto order_key = [&](std::size_t r, bool swap) {
    const auto& rename = renamings[r];
    std::vector<std::size_t> inputs;
    std::set_union(a.renamed_inputs[r].begin(), a.renamed_inputs[r].end(), b.renamed_inputs[r].begin(), b.renamed_inputs[r].end(),
                   std::back_inserter(inputs));
    auto text_order = [&](const ViewInfo& first, const ViewInfo& second) {
      std::vector<std::size_t> seq;
      for (std::size_t i : swap ? first.swapped_appearance : first.appearance) seq.push_back(rename[i]);
      for (std::size_t i : swap ? second.swapped_appearance : second.appearance) seq.push_back(rename[i]);
      return seq;
    };
    std::vector<std::size_t> seq;
    if (a_first && !b_first)
      seq = text_order(a, b);
    else if (b_first && !a_first)
      seq = text_order(b, a);
    else
      seq = std::min(text_order(a, b), text_order(b, a));
    const Key128 x = swap ? a.swapped_renamed[r] : a.renamed[r], y = swap ? b.swapped_renamed[r] : b.renamed[r];
    return std::tuple{inputs, seq, x < y ? x : y, x < y ? y : x};
  };
  const auto own = order_key(0, false);
  for (std::size_t r = 0; r < a.renamed.size(); ++r) {
    if (r > 0 && order_key(r, false) < own) return false;
    if (two_outputs && order_key(r, true) < own) return false;
  }
  return true;
}

}  // namespace

bool rewrites_from(const GraphView& a, const GraphView& b, const OpSet& ops) {
  if (a.size() == 0) return false;
  if (b.size() == 0) return true;
  if (a.size() != b.size()) return a.size() < b.size();
  auto parallel = [&](std::uint16_t inst) { return ops.at(inst).is_parallel(); };
  return count_steps(a, parallel) <= count_steps(b, parallel);
}

std::vector<std::vector<std::size_t>> input_renamings(const std::vector<InputTensor>& inputs) {
  std::map<std::string, std::vector<std::size_t>> classes;
  for (std::size_t i = 0; i < inputs.size(); ++i) classes[inputs[i].shape.to_string()].push_back(i);
  std::vector<std::vector<std::size_t>> renamings;
  std::vector<std::size_t> identity(inputs.size());
  std::iota(identity.begin(), identity.end(), 0);
  renamings.push_back(identity);
  for (const auto& [shape, members] : classes) {
    if (members.size() < 2) continue;
    const std::size_t before = renamings.size();
    for (std::size_t r = 0; r < before; ++r) {
      std::vector<std::size_t> perm = members;
      while (std::next_permutation(perm.begin(), perm.end())) {
        if (renamings.size() >= kMaxRenamings) return renamings;
        std::vector<std::size_t> renamed = renamings[r];
        for (std::size_t i = 0; i < members.size(); ++i) renamed[members[i]] = renamings[r][perm[i]];
        renamings.push_back(std::move(renamed));
      }
    }
  }
  return renamings;
}

std::vector<CandidatePair> prune_candidates(const spec::Library& library, const OpSet& ops, const std::vector<InputTensor>& inputs,
                                            const Enumeration& enumeration, const GeneratorOptions& options, PruneStats& stats,
                                            const ProgressFn& progress) {
  const auto& views = enumeration.views;
  const auto& fps = enumeration.fingerprints;
  // Buckets: runs of equal fingerprints (the views are sorted by fingerprint, size and key).
  std::vector<std::pair<std::size_t, std::size_t>> buckets;
  std::unordered_map<std::uint64_t, Representative> smallest;
  for (std::size_t i = 0; i < views.size();) {
    std::size_t j = i + 1;
    while (j < views.size() && fps[j] == fps[i]) ++j;
    if (j - i >= 2) buckets.emplace_back(i, j);
    if (options.prune_implied) smallest[fps[i]] = {views[i].size(), view_key(views[i])};
    i = j;
  }
  stats = {};
  stats.buckets = buckets.size();
  std::vector<std::size_t> members;
  for (const auto& [b, e] : buckets) {
    for (std::size_t i = b; i < e; ++i) members.push_back(i);
    stats.candidates += (e - b) * (e - b - 1) / 2;
  }

  const std::size_t jobs = static_cast<std::size_t>(std::max(1, options.jobs));
  const auto renamings = input_renamings(inputs);
  std::vector<ViewInfo> info(views.size());
  {
    std::vector<std::unique_ptr<Describer>> describers;
    for (std::size_t w = 0; w < jobs; ++w)
      describers.push_back(std::make_unique<Describer>(library, ops, inputs, options, renamings, smallest));
    parallel_for(members.size(), jobs, "describe candidates", progress,
                 [&](std::size_t w, std::size_t item) { info[members[item]] = describers[w]->describe(views[members[item]]); });
  }

  struct BucketResult {
    std::vector<CandidatePair> kept;
    std::size_t unused = 0, renaming = 0, common = 0, implied = 0;
  };
  std::vector<BucketResult> results(buckets.size());
  parallel_for(buckets.size(), jobs, "prune", progress, [&](std::size_t, std::size_t item) {
    const auto [begin, end] = buckets[item];
    BucketResult& out = results[item];
    std::vector<CandidatePair> survivors;
    for (std::size_t a = begin; a < end; ++a) {
      for (std::size_t b = a + 1; b < end; ++b) {
        if (views[a].has_two_outputs() != views[b].has_two_outputs()) {  // a fingerprint collision
          ++out.common;
          continue;
        }
        if (info[a].unused_computation || info[b].unused_computation) {
          ++out.unused;
          continue;
        }
        if (!canonical_under_renaming(views[a], info[a], views[b], info[b], ops, renamings)) {
          ++out.renaming;
          continue;
        }
        if (share_an_input_subgraph(info[a], info[b]) || share_the_output_operator(views[a], info[a], views[b], info[b]) ||
            (views[a].has_two_outputs() && !is_merge(views[a], info[a], views[b], info[b]))) {
          ++out.common;
          continue;
        }
        if (info[a].non_minimal_part || info[b].non_minimal_part) {
          ++out.implied;
          continue;
        }
        const CandidatePair pair = rewrites_from(views[a], views[b], ops) ? CandidatePair{a, b} : CandidatePair{b, a};
        // Two outputs: when the side computing them apart has an output a smaller graph computes,
        // the pair follows from that output's own rule and the pair with the smaller graph in its
        // place. (The merged side's outputs never are the smallest: that is what a merge is.)
        const std::size_t apart = info[a].apart_instance >= 0 ? a : b;
        if (views[a].has_two_outputs() && info[apart].non_minimal_output) {
          ++out.implied;
          continue;
        }
        survivors.push_back(pair);
      }
    }
    if (options.prune_implied) {
      auto total = [&](const CandidatePair& p) { return views[p.lhs].size() + views[p.rhs].size(); };
      std::stable_sort(survivors.begin(), survivors.end(),
                       [&](const CandidatePair& x, const CandidatePair& y) { return total(x) < total(y); });
      pcg::UnionFind classes(end - begin);
      for (const auto& p : survivors) {
        if (classes.unite(p.lhs - begin, p.rhs - begin))
          out.kept.push_back(p);
        else
          ++out.implied;
      }
    } else {
      out.kept = std::move(survivors);
    }
  });

  std::vector<CandidatePair> kept;
  for (auto& r : results) {
    stats.removed_unused += r.unused;
    stats.removed_renaming += r.renaming;
    stats.removed_common_subgraph += r.common;
    stats.removed_implied += r.implied;
    kept.insert(kept.end(), r.kept.begin(), r.kept.end());
  }
  stats.kept = kept.size();
  return kept;
}

}  // namespace loom::superopt
