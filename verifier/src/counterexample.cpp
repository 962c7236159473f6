#include "loom/verifier/counterexample.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "concrete_binder.hpp"
#include "loom/interpreter/axiom_check.hpp"
#include "loom/interpreter/int_eval.hpp"
#include "loom/interpreter/term_eval.hpp"
#include "loom/verifier/term_text.hpp"

namespace loom::verifier {
namespace {

using Types = spec::TermEvaluator<spec::RealDomain>;

constexpr std::size_t kMaxRankCombinations = 256;

// Names the attributes of a term's applications use (size symbols such as `n` in `split<1, n>`).
void collect_attribute_names(const spec::Term& t, std::vector<std::string>& names) {
  for (const auto& a : t.attrs) spec::collect_names(*a.value, names);
  for (const auto& a : t.args) collect_attribute_names(*a, names);
}

void collect_variables(const spec::Term& t, std::vector<std::string>& names) {
  if (t.kind == spec::TermKind::Var && std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
  for (const auto& a : t.args) collect_variables(*a, names);
}

// Draws concrete, well-typed shapes for one goal of a rule.
class ShapeSampler {
 public:
  ShapeSampler(const spec::Library& library, const spec::Quantifier& quantifier, const Goal& goal, const CounterexampleOptions& options)
      : library_(library), quantifier_(quantifier), goal_(goal), options_(options), rng_(options.seed) {
    std::vector<std::string> variables;
    collect_variables(*goal.lhs, variables);
    collect_variables(*goal.rhs, variables);
    collect_attribute_names(*goal.lhs, in_terms_);
    collect_attribute_names(*goal.rhs, in_terms_);
    for (const auto& b : quantifier.binders) {
      if (b.is_int) {
        ints_.push_back(&b);
        continue;
      }
      if (!b.shape) continue;
      shaped_.push_back(&b);
      for (const auto& d : b.shape->dims) {
        if (d.is_pack()) {
          if (std::find(packs_.begin(), packs_.end(), d.pack_name) == packs_.end()) packs_.push_back(d.pack_name);
        } else {
          spec::collect_names(*d.expr, dims_);
        }
      }
    }
    std::erase_if(dims_, [&](const std::string& n) {
      return std::any_of(ints_.begin(), ints_.end(), [&](const spec::Binder* b) { return b->name == n; });
    });
    for (const auto& v : variables)
      if (std::none_of(shaped_.begin(), shaped_.end(), [&](const spec::Binder* b) { return b->name == v; })) shapeless_.push_back(v);
    // Every combination of ranks for the variables written without a shape, smallest first.
    rank_choices_.push_back({});
    for (std::size_t i = 0; i < shapeless_.size(); ++i) {
      std::vector<std::vector<int>> next;
      for (const auto& c : rank_choices_)
        for (int r = 0; r <= options.max_rank && next.size() < kMaxRankCombinations; ++r) {
          next.push_back(c);
          next.back().push_back(r);
        }
      rank_choices_ = std::move(next);
    }
  }

  struct Drawn {
    spec::Quantifier shapes;
    pcg::ParallelShape lhs, rhs;
  };

  std::vector<Drawn> sample() {
    std::vector<Drawn> found;
    std::set<std::string> seen;
    // Variables without a shape get each rank combination its own share of tries.
    const int tries = fixed() ? 1 : options_.tries * static_cast<int>(shapeless_.empty() ? 1 : rank_choices_.size());
    for (int attempt = 0; attempt < tries && static_cast<int>(found.size()) < options_.shapes; ++attempt) {
      auto q = draw(rank_choices_[static_cast<std::size_t>(attempt) % rank_choices_.size()]);
      if (q && seen.insert(quantifier_to_string(q->shapes)).second) found.push_back(std::move(*q));
    }
    return found;
  }

 private:
  // Whether there is only one assignment to draw (rules read from PCGs have concrete shapes).
  bool fixed() const {
    return dims_.empty() && packs_.empty() && shapeless_.empty() &&
           std::all_of(ints_.begin(), ints_.end(), [](const spec::Binder* b) { return b->domain && b->domain->size() == 1; });
  }

  std::int64_t uniform(std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng_); }

  std::int64_t draw_int(const spec::Binder& b) {
    if (b.domain) return (*b.domain)[static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(b.domain->size()) - 1))];
    if (b.bound_op == ">") return uniform(b.bound + 1, b.bound + 4);
    if (b.bound_op == ">=") return uniform(b.bound, b.bound + 3);
    if (b.bound_op == "<") return uniform(b.bound - 4, b.bound - 1);
    if (b.bound_op == "<=") return uniform(b.bound - 3, b.bound);
    std::int64_t v = uniform(1, 4);
    return b.bound_op == "!=" && v == b.bound ? v + 1 : v;
  }

  std::vector<std::int64_t> random_dims(std::size_t rank) {
    std::vector<std::int64_t> dims(rank);
    for (auto& d : dims) d = uniform(1, options_.max_dim);
    return dims;
  }

  // One shape assignment, if both sides are well-typed on it, with the sides' parallel shapes.
  std::optional<Drawn> draw(const std::vector<int>& ranks) {
    spec::IntScope scope;
    spec::Quantifier concrete;
    Types::Bindings vars;
    try {
      for (const auto* b : ints_) {
        scope.values[b->name] = draw_int(*b);
        concrete.binders.push_back(int_binder(b->name, scope.values[b->name]));
      }
      // Size symbols may also stand in terms (`split<1, n>`); the instance binds those.
      for (const auto& d : dims_) {
        scope.values[d] = uniform(1, options_.max_dim);
        if (std::find(in_terms_.begin(), in_terms_.end(), d) != in_terms_.end()) concrete.binders.push_back(int_binder(d, scope.values[d]));
      }
      for (const auto& p : packs_) scope.packs[p] = random_dims(static_cast<std::size_t>(uniform(1, 3)));
      if (quantifier_.where && spec::eval_int(*quantifier_.where, scope) == 0) return std::nullopt;
      for (const auto* b : shaped_) {
        std::vector<std::int64_t> dims;
        for (const auto& d : b->shape->dims) {
          if (d.is_pack())
            dims.insert(dims.end(), scope.packs[d.pack_name].begin(), scope.packs[d.pack_name].end());
          else
            dims.push_back(spec::eval_int(*d.expr, scope));
        }
        pcg::ParallelShape shape = pcg::ParallelShape::unpartitioned(dims);
        auto fill = [&](const std::vector<spec::ExprPtr>& list, std::vector<std::int64_t>& target) {
          if (list.empty()) return;
          if (list.size() != dims.size()) throw LoomError("degree list of the wrong rank");
          for (std::size_t i = 0; i < list.size(); ++i) target[i] = spec::eval_int(*list[i], scope);
        };
        fill(b->degrees.D, shape.D);
        fill(b->degrees.P, shape.P);
        if (b->degrees.V) shape.V = spec::eval_int(*b->degrees.V, scope);
        if (b->degrees.R) shape.R = spec::eval_int(*b->degrees.R, scope);
        shape.validate();
        vars[b->name].shape = shape;
        concrete.binders.push_back(tensor_binder(b->name, shape));
      }
      for (std::size_t i = 0; i < shapeless_.size(); ++i) {
        // Small sizes, so that sizes the ops need equal (a matmul's inner ones) coincide often.
        std::vector<std::int64_t> dims(static_cast<std::size_t>(ranks[i]));
        for (auto& d : dims) d = uniform(1, std::min<std::int64_t>(3, options_.max_dim));
        auto shape = pcg::ParallelShape::unpartitioned(dims);
        vars[shapeless_[i]].shape = shape;
        concrete.binders.push_back(tensor_binder(shapeless_[i], shape));
      }
      Types types(library_, false);
      auto lhs = types.eval_single(*goal_.lhs, vars, scope);
      auto rhs = types.eval_single(*goal_.rhs, vars, scope);
      return Drawn{std::move(concrete), std::move(lhs.shape), std::move(rhs.shape)};
    } catch (const LoomError&) {
      return std::nullopt;
    }
  }

  const spec::Library& library_;
  const spec::Quantifier& quantifier_;
  const Goal& goal_;
  const CounterexampleOptions& options_;
  std::mt19937_64 rng_;
  std::vector<const spec::Binder*> ints_, shaped_;
  std::vector<std::string> dims_, packs_, shapeless_, in_terms_;
  std::vector<std::vector<int>> rank_choices_;
};

std::string output_prefix(const Obligation& ob, std::size_t goal) {
  return ob.goals.size() > 1 ? "output " + std::to_string(goal) + ", " : std::string();
}

std::optional<Counterexample> shape_mismatch(const Obligation& ob, std::size_t goal, const ShapeSampler::Drawn& d) {
  if (d.lhs == d.rhs) return std::nullopt;
  std::string at = quantifier_to_string(d.shapes);
  if (at.size() > 2) at = at.substr(7, at.size() - 9);  // drop "forall " and ". "
  return Counterexample{goal, d.shapes,
                        output_prefix(ob, goal) + "on " + at + ": the sides differ in parallel shape: left " + d.lhs.to_string() +
                            ", right " + d.rhs.to_string()};
}

}  // namespace

std::optional<Counterexample> find_shape_mismatch(const spec::Library& library, const Obligation& obligation,
                                                  const CounterexampleOptions& options) {
  for (std::size_t g = 0; g < obligation.goals.size(); ++g) {
    ShapeSampler sampler(library, obligation.quantifier, obligation.goals[g], options);
    for (const auto& drawn : sampler.sample())
      if (auto mismatch = shape_mismatch(obligation, g, drawn)) return mismatch;
  }
  return std::nullopt;
}

std::optional<Counterexample> find_counterexample(const spec::Library& library, const Obligation& obligation,
                                                  const CounterexampleOptions& options) {
  for (std::size_t g = 0; g < obligation.goals.size(); ++g) {
    const Goal& goal = obligation.goals[g];
    ShapeSampler sampler(library, obligation.quantifier, goal, options);
    std::uint64_t seed = options.seed;
    for (const auto& drawn : sampler.sample()) {
      if (auto mismatch = shape_mismatch(obligation, g, drawn)) return mismatch;
      spec::EquationDecl instance;
      instance.name = obligation.name;
      instance.quantifier = drawn.shapes;
      instance.lhs = goal.lhs;
      instance.rhs = goal.rhs;
      instance.loc = obligation.loc;
      spec::AxiomCheckOptions check;
      check.instances = options.values_per_shape;
      check.max_tries = 2 * options.values_per_shape;
      check.seed = seed++;
      const spec::AxiomResult r = spec::check_axiom(library, instance, check);
      if (!r.sound && r.instances > 0) return Counterexample{g, drawn.shapes, output_prefix(obligation, g) + r.problem};
    }
  }
  return std::nullopt;
}

}  // namespace loom::verifier
