#include "loom/interpreter/axiom_check.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "loom/interpreter/term_eval.hpp"

namespace loom::spec {
namespace {

using Eval = TermEvaluator<RealDomain>;

std::string tensor_text(const Tensor<double>& t) {
  std::ostringstream os;
  os << dims_to_string(t.dims) << " {";
  for (std::size_t i = 0; i < t.data.size() && i < 32; ++i) os << (i ? ", " : "") << t.data[i];
  if (t.data.size() > 32) os << ", ...";
  os << "}";
  return os.str();
}

std::int64_t draw_int(const Binder& b, std::mt19937_64& rng) {
  auto uniform = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  if (b.domain) return (*b.domain)[static_cast<std::size_t>(uniform(0, static_cast<std::int64_t>(b.domain->size()) - 1))];
  if (b.bound_op == ">") return uniform(b.bound + 1, b.bound + 4);
  if (b.bound_op == ">=") return uniform(b.bound, b.bound + 3);
  if (b.bound_op == "<") return uniform(b.bound - 4, b.bound - 1);
  if (b.bound_op == "<=") return uniform(b.bound - 3, b.bound);
  if (b.bound_op == "!=") {
    std::int64_t v = uniform(1, 4);
    return v == b.bound ? v + 1 : v;
  }
  return uniform(1, 4);
}

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= 1e-7 * (1 + std::max(std::fabs(a), std::fabs(b)));
}

class AxiomChecker {
 public:
  AxiomChecker(const Library& lib, const EquationDecl& ax, const AxiomCheckOptions& opt)
      : lib_(lib), ax_(ax), opt_(opt), rng_(opt.seed ^ std::hash<std::string>{}(ax.name)) {
    std::set<std::string> ints;
    for (const auto& b : ax.quantifier.binders)
      if (b.is_int) ints.insert(b.name);
    for (const auto& b : ax.quantifier.binders) {
      if (b.is_int || !b.shape) continue;
      for (const auto& d : b.shape->dims)
        if (d.is_pack() && std::find(packs_.begin(), packs_.end(), d.pack_name) == packs_.end()) packs_.push_back(d.pack_name);
      for (const auto& d : b.shape->dims)
        if (!d.is_pack()) collect_names(*d.expr, dims_);
    }
    std::erase_if(dims_, [&](const std::string& name) { return ints.count(name) > 0; });
  }

  AxiomResult run() {
    AxiomResult result;
    result.axiom = &ax_;
    std::string last_rejection;
    for (int attempt = 0; attempt < opt_.max_tries && result.instances < opt_.instances; ++attempt) {
      IntScope scope;
      Eval::Bindings vars;
      std::string why;
      if (!sample(scope, vars, why)) {
        last_rejection = why;
        continue;
      }
      Eval eval(lib_);
      // Each side is one output or several (a tuple, or an operator with several outputs).
      auto outputs_of = [&](const Term& side) { return eval.eval(side, vars, scope); };
      std::optional<std::vector<TermValue<RealDomain>>> lhs, rhs;
      std::string lhs_error, rhs_error;
      try {
        lhs = outputs_of(*ax_.lhs);
      } catch (const LoomError& e) {
        lhs_error = e.what();
      }
      try {
        rhs = outputs_of(*ax_.rhs);
      } catch (const LoomError& e) {
        rhs_error = e.what();
      }
      if (!lhs && !rhs) {
        last_rejection = "both sides are ill-typed: " + lhs_error;
        continue;
      }
      ++result.instances;
      std::string instance = describe(scope, vars);
      if (!lhs || !rhs) {
        result.problem = "on " + instance + ": the " + std::string(lhs ? "right" : "left") +
                         " side is ill-typed while the other is not: " + (lhs ? rhs_error : lhs_error);
        return result;
      }
      if (lhs->size() != rhs->size()) {
        result.problem = "the left side has " + std::to_string(lhs->size()) + " outputs and the right side " + std::to_string(rhs->size());
        return result;
      }
      for (std::size_t o = 0; o < lhs->size(); ++o) {
        const TermValue<RealDomain>& l = (*lhs)[o];
        const TermValue<RealDomain>& r = (*rhs)[o];
        const std::string which = lhs->size() > 1 ? "output " + std::to_string(o) + ": " : "";
        if (l.shape != r.shape) {
          result.problem = "on " + instance + ": " + which + "the sides differ in parallel shape: left " + l.shape.to_string() +
                           ", right " + r.shape.to_string();
          return result;
        }
        for (std::size_t i = 0; i < l.value.data.size(); ++i) {
          if (!same_value(l.value.data[i], r.value.data[i])) {
            std::ostringstream os;
            os.precision(10);
            os << "on " << instance << ": " << which << "element " << i << " differs: left " << l.value.data[i] << ", right "
               << r.value.data[i] << " (left = " << tensor_text(l.value) << ", right = " << tensor_text(r.value) << ")";
            result.problem = os.str();
            return result;
          }
        }
      }
    }
    if (result.instances == 0) {
      result.problem = "no well-typed instance found in " + std::to_string(opt_.max_tries) + " samples (last: " + last_rejection + ")";
      return result;
    }
    result.sound = true;
    return result;
  }

 private:
  bool sample(IntScope& scope, Eval::Bindings& vars, std::string& why) {
    for (const auto& b : ax_.quantifier.binders)
      if (b.is_int) scope.values[b.name] = draw_int(b, rng_);
    for (const auto& d : dims_) scope.values[d] = std::uniform_int_distribution<std::int64_t>(1, opt_.max_dim)(rng_);
    // Rank packs get a random rank of 1 to 3.
    for (const auto& p : packs_) {
      auto& dims = scope.packs[p];
      dims.assign(static_cast<std::size_t>(std::uniform_int_distribution<int>(1, 3)(rng_)), 0);
      for (auto& d : dims) d = std::uniform_int_distribution<std::int64_t>(1, opt_.max_dim)(rng_);
    }
    try {
      if (ax_.quantifier.where && eval_int(*ax_.quantifier.where, scope) == 0) {
        why = "the where-condition does not hold";
        return false;
      }
      for (const auto& b : ax_.quantifier.binders) {
        if (b.is_int) continue;
        std::vector<std::int64_t> dims;
        for (const auto& d : b.shape->dims) {
          if (d.is_pack())
            dims.insert(dims.end(), scope.packs[d.pack_name].begin(), scope.packs[d.pack_name].end());
          else
            dims.push_back(eval_int(*d.expr, scope));
        }
        pcg::ParallelShape shape = pcg::ParallelShape::unpartitioned(dims);
        auto fill = [&](const std::vector<ExprPtr>& list, std::vector<std::int64_t>& target, const char* what) {
          if (list.empty()) return true;
          if (list.size() != dims.size()) {
            why = std::string(what) + " of '" + b.name + "' lists " + std::to_string(list.size()) + " degrees for rank " +
                  std::to_string(dims.size());
            return false;
          }
          for (std::size_t i = 0; i < list.size(); ++i) target[i] = eval_int(*list[i], scope);
          return true;
        };
        if (!fill(b.degrees.D, shape.D, "D") || !fill(b.degrees.P, shape.P, "P")) return false;
        if (b.degrees.V) shape.V = eval_int(*b.degrees.V, scope);
        if (b.degrees.R) shape.R = eval_int(*b.degrees.R, scope);
        for (std::size_t i = 0; i < dims.size(); ++i) {
          if (dims[i] <= 0 || shape.D[i] <= 0 || shape.P[i] <= 0 || dims[i] % (shape.D[i] * shape.P[i]) != 0) {
            why = "'" + b.name + "' " + shape.to_string() + " cannot be split evenly";
            return false;
          }
        }
        std::int64_t elements = 1;
        for (std::int64_t d : dims) {
          if (elements > opt_.max_elements / std::max<std::int64_t>(d, 1)) {
            why = "'" + b.name + "' " + Tensor<double>::dims_text(dims) + " holds more than the " + std::to_string(opt_.max_elements) +
                  " elements a numeric check draws for one variable";
            return false;
          }
          elements *= d;
        }
        Tensor<double> value(dims);
        std::uniform_real_distribution<double> uni(-1.0, 1.0);
        for (auto& v : value.data) v = uni(rng_);
        vars[b.name] = {shape, std::move(value)};
      }
    } catch (const LoomError& e) {
      why = e.what();
      return false;
    }
    return true;
  }

  std::string describe(const IntScope& scope, const Eval::Bindings& vars) const {
    std::ostringstream os;
    os.precision(6);
    bool first = true;
    for (const auto& [k, v] : scope.values) {
      os << (first ? "" : ", ") << k << " = " << v;
      first = false;
    }
    for (const auto& [k, v] : vars) {
      os << (first ? "" : ", ") << k << " = " << tensor_text(v.value);
      if (!v.shape.is_unpartitioned()) os << " as " << v.shape.to_string();
      first = false;
    }
    return os.str();
  }

  const Library& lib_;
  const EquationDecl& ax_;
  const AxiomCheckOptions& opt_;
  std::mt19937_64 rng_;
  std::vector<std::string> dims_;
  std::vector<std::string> packs_;
};

}  // namespace

AxiomResult check_axiom(const Library& library, const EquationDecl& axiom, const AxiomCheckOptions& options) {
  return AxiomChecker(library, axiom, options).run();
}

}  // namespace loom::spec
