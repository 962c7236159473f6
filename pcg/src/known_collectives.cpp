#include "loom/pcg/known_collectives.hpp"

#include <algorithm>

namespace loom::pcg {

const std::vector<KnownCollective>& known_collectives() {
  static const std::vector<KnownCollective> all = {
      {"scatter", std::nullopt},
      {"gather", std::nullopt},
      {"broadcast", std::nullopt},
      {"reduce", std::nullopt},
      {"microbatch", std::nullopt},
      {"accumulate", std::nullopt},
      {"allreduce", Collective::allreduce},
      {"reduce_scatter", Collective::reduce_scatter},
      {"all_gather", Collective::all_gather},
      {"all_to_all", Collective::all_to_all},
  };
  return all;
}

const KnownCollective* find_known_collective(std::string_view name) {
  const auto& all = known_collectives();
  const auto it = std::find_if(all.begin(), all.end(), [&](const KnownCollective& c) { return c.name == name; });
  return it == all.end() ? nullptr : &*it;
}

std::string known_collective_names() {
  std::string out;
  for (const auto& c : known_collectives()) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out;
}

std::string_view collective_name(Collective call) {
  for (const auto& c : known_collectives())
    if (c.call == call) return c.name;
  return {};
}

}  // namespace loom::pcg
