#pragma once
// The collectives a spec's `lowers_to` may name, with what the runtime executes for each: one of
// its collective calls (collective_groups.hpp), or point-to-point moves of the pieces that change
// hands (piece_moves.hpp), which carry any change of layout.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/pcg/collective_groups.hpp"

namespace loom::pcg {

struct KnownCollective {
  std::string_view name;
  std::optional<Collective> call;  // none: point-to-point piece moves
};

const std::vector<KnownCollective>& known_collectives();

// The known collective of that name, or null.
const KnownCollective* find_known_collective(std::string_view name);

// "scatter, gather, ...", for messages.
std::string known_collective_names();

// The name a spec gives the runtime's collective call.
std::string_view collective_name(Collective call);

}  // namespace loom::pcg
