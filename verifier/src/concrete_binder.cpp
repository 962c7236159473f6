#include "concrete_binder.hpp"

#include <algorithm>
#include <memory>

namespace loom::verifier {

spec::ExprPtr number_expr(std::int64_t value) {
  auto e = std::make_shared<spec::Expr>();
  e->kind = spec::ExprKind::Number;
  e->number = static_cast<double>(value);
  e->integral = true;
  return e;
}

spec::Binder tensor_binder(const std::string& name, const pcg::ParallelShape& shape) {
  spec::Binder b;
  b.name = name;
  b.shape.emplace();
  for (auto d : shape.dims) b.shape->dims.push_back({"", number_expr(d)});
  auto list = [](const std::vector<std::int64_t>& degrees) {
    std::vector<spec::ExprPtr> exprs;
    if (std::all_of(degrees.begin(), degrees.end(), [](std::int64_t d) { return d == 1; })) return exprs;
    for (auto d : degrees) exprs.push_back(number_expr(d));
    return exprs;
  };
  b.degrees.D = list(shape.D);
  b.degrees.P = list(shape.P);
  if (shape.V != 1) b.degrees.V = number_expr(shape.V);
  if (shape.R != 1) b.degrees.R = number_expr(shape.R);
  return b;
}

spec::Binder int_binder(const std::string& name, std::int64_t value) {
  spec::Binder b;
  b.name = name;
  b.is_int = true;
  b.domain = std::vector<std::int64_t>{value};
  return b;
}

}  // namespace loom::verifier
