#include "zoo/table2.hpp"

#include "loom/pcg/diagnostic.hpp"

namespace loom::models::zoo {

const Table2Model& table2(const std::string& model) {
  static const std::vector<Table2Model> table = {
      {"swin", {{{32, 512, 16}, {48, 768, 24}, {56, 1024, 32}, {64, 1536, 32}}}},
      {"gpt3", {{{24, 2048, 32}, {32, 2560, 32}, {32, 4096, 32}, {48, 5120, 32}}}},
      {"mbart", {{{24, 3072, 16}, {32, 4096, 32}, {48, 5120, 32}, {56, 6144, 32}}}},
      {"alphafold2", {{{48, 256, 8}, {64, 512, 16}, {96, 1024, 32}, {128, 1024, 32}}}},
  };
  for (const auto& m : table)
    if (m.name == model) return m;
  throw LoomError("no table 2 entry for model " + model);
}

Table2Size table2_size(const std::string& model, const Params& p) {
  const std::int64_t size = p("size");
  if (size < 0 || size > 3) throw LoomError(model + ": size must be 0..3 (a row of table 2), got " + std::to_string(size));
  const Table2Row& row = table2(model).rows[static_cast<std::size_t>(size)];
  Table2Size out{row.layers, p("hidden") > 0 ? p("hidden") : row.hidden, p("heads") > 0 ? p("heads") : row.heads};
  if (out.hidden % out.heads != 0) {
    throw LoomError(model + ": " + std::to_string(out.heads) + " heads do not divide the hidden size " + std::to_string(out.hidden));
  }
  return out;
}

std::vector<ModelParam> table2_params(const std::string& model) {
  std::string sizes;
  for (const auto& row : table2(model).rows) {
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(row.hidden) + "/" + std::to_string(row.heads) + "/" + std::to_string(row.layers);
  }
  return {{"size", 0, "row of SuperScaler's table 2 (hidden/heads/layers: " + sizes + ")"},
          {"hidden", 0, "hidden size (0: from the table)"},
          {"heads", 0, "attention heads (0: from the table)"}};
}

}  // namespace loom::models::zoo
