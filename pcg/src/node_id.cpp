#include "loom/pcg/node_id.hpp"

#include <nlohmann/json.hpp>

namespace loom::pcg {

void to_json(nlohmann::json& j, NodeId id) { j = id.value(); }
void from_json(const nlohmann::json& j, NodeId& id) { id = NodeId(j.get<int>()); }

}  // namespace loom::pcg
