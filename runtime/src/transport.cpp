#include "loom/runtime/transport.hpp"

#include <cstring>
#include <string>

#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {
namespace {

void copy_values(const HostValues& from, const HostValues& to, const char* where) {
  if (from.type != to.type || from.count != to.count)
    throw LoomError(std::string("LocalTransport::") + where + ": " + std::to_string(from.count) + " values given for " +
                    std::to_string(to.count) + (from.type != to.type ? " of another element type" : ""));
  if (from.count > 0) std::memcpy(to.data, from.data, from.bytes());
}

}  // namespace

void Transport::check_blocks(std::size_t count, const std::vector<int>& group) {
  if (group.empty() || count % group.size() != 0)
    throw LoomError("reduce_scatter over a group of " + std::to_string(group.size()) + " processes: " + std::to_string(count) +
                    " values do not split into " + std::to_string(group.size()) + " equal blocks");
}

void LocalTransport::move_values(const std::vector<Message>& sends, const std::vector<Message>& receives) {
  if (sends.size() != receives.size())
    throw LoomError("LocalTransport::exchange: " + std::to_string(sends.size()) + " messages sent, " + std::to_string(receives.size()) +
                    " received");
  for (std::size_t i = 0; i < sends.size(); ++i) copy_values(sends[i].values, receives[i].values, "exchange");
}

void LocalTransport::gather_values(HostValues mine, HostValues all, const std::vector<int>&) { copy_values(mine, all, "all_gather"); }

void LocalTransport::scatter_sums(HostValues all, HostValues mine, const std::vector<int>&) { copy_values(all, mine, "reduce_scatter"); }

}  // namespace loom::runtime
