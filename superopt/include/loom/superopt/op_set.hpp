#pragma once
// The operator instances the generator enumerates: every chosen op, parallel form and fused form
// of the spec library with each combination of attribute values from their domains.
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/superopt/options.hpp"

namespace loom::superopt {

enum class FormKind { Op, Parallel, Fused };

// How many dimensions an input of an op may have: exactly `rank`, or at least `rank` when its
// declared shape holds a rank pack. Forms accept any rank.
struct RankRule {
  std::size_t rank = 0;
  bool at_least = true;
  bool accepts(std::size_t r) const { return at_least ? r >= rank : r == rank; }
};

struct OpInstance {
  std::string name;
  FormKind kind = FormKind::Op;
  pcg::AttrMap attrs;
  std::vector<std::string> attr_order;  // attribute names in declaration order
  std::set<std::string> free_attrs;     // attributes without a declared domain (written symbolically)
  std::size_t inputs = 0;
  std::size_t outputs = 0;
  std::vector<RankRule> input_ranks;

  bool is_parallel() const { return kind != FormKind::Op; }
  std::string describe() const;  // e.g. `partition<0, 2>`, attributes in declaration order
};

class OpSet {
 public:
  // Throws LoomError for a name the library does not declare (or declares as the wrong kind),
  // a `degree` value outside a form's declared domain, or an op with too many inputs.
  static OpSet build(const spec::Library& library, const GeneratorOptions& options, const std::vector<InputTensor>& inputs);

  const std::vector<OpInstance>& instances() const { return instances_; }
  const OpInstance& at(std::size_t i) const { return instances_[i]; }
  std::size_t size() const { return instances_.size(); }
  std::size_t max_inputs() const { return max_inputs_; }

 private:
  std::vector<OpInstance> instances_;
  std::size_t max_inputs_ = 0;
};

// The most inputs an enumerated op may have.
inline constexpr std::size_t kMaxOpInputs = 8;

// Whether `name` is a parallel or fused form of the library (the rule-category test).
bool is_parallel_form(const spec::Library& library, const std::string& name);

}  // namespace loom::superopt
