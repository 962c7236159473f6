#pragma once
// The library's parallel and fused forms as moves between parallel shapes: what each does to the
// degrees, read from its declaration (specs/ops/parallel.loom), so that C++ names none of them and
// a form a user declares is one more move.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "loom/interpreter/library.hpp"
#include "loom/pcg/op_catalog.hpp"
#include "loom/pcg/parallel_shape.hpp"

namespace loom::search {

// One degree update of a form: the degree it changes (of dimension `dim_attr` for D and P), by the
// value of the attribute `amount_attr`.
struct DegreeChange {
  spec::DegreeKind degree = spec::DegreeKind::D;
  std::string dim_attr;
  std::string amount_attr;
  bool multiply = true;
};

// A parallel form, or a fused form whose body applies parallel forms one after another, with its
// degree updates in the order they apply.
struct LayoutForm {
  std::string op;
  std::vector<DegreeChange> changes;

  // The shape after the form with these attributes, or nullopt where an update cannot apply (a
  // degree it does not divide, a dimension the shape lacks, pieces that would not be whole). The
  // library's own rules (spec::Library::infer) have the last word.
  std::optional<pcg::ParallelShape> apply(const pcg::AttrMap& attrs, const pcg::ParallelShape& shape) const;
  // The attributes that name a dimension, and those that give a degree.
  std::vector<std::string> dim_attrs() const;
  std::vector<std::string> amount_attrs() const;
};

// Every form of the library whose updates change degrees by its attributes. Forms that update by
// anything else (a fixed degree, an expression) move nothing here.
std::vector<LayoutForm> layout_forms(const spec::Library& library);

// Calls `visit` with every assignment of the form's attributes: dimensions below `rank`, degrees
// among `amounts`.
void each_assignment(const LayoutForm& form, std::size_t rank, const std::vector<std::int64_t>& amounts,
                     const std::function<void(const pcg::AttrMap&)>& visit);

}  // namespace loom::search
