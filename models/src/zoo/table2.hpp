#pragma once
// SuperScaler's table 2: the four sizes of each evaluated model, picked by the `size` parameter
// (0..3); `hidden` and `heads` override the table when non-zero.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/models/registry.hpp"

namespace loom::models::zoo {

struct Table2Row {
  std::int64_t layers, hidden, heads;
};

struct Table2Model {
  std::string name;
  std::array<Table2Row, 4> rows;
};

const Table2Model& table2(const std::string& model);

// hidden and heads of the chosen size, after the overrides.
struct Table2Size {
  std::int64_t layers, hidden, heads;
};
Table2Size table2_size(const std::string& model, const Params& p);

// The `size`, `hidden` and `heads` parameters every table-2 model has.
std::vector<ModelParam> table2_params(const std::string& model);

}  // namespace loom::models::zoo
