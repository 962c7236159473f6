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

std::string group_text(const std::vector<int>& group) {
  std::string text = "{";
  for (std::size_t i = 0; i < group.size(); ++i) text += (i == 0 ? "" : ", ") + std::to_string(group[i]);
  return text + "}";
}

void Transport::check_divides(std::size_t count, const std::vector<int>& group) {
  if (group.empty()) throw LoomError("a collective over an empty group");
  if (count % group.size() != 0)
    throw LoomError("a collective over the group " + group_text(group) + ": " + std::to_string(count) + " values do not split into " +
                    std::to_string(group.size()) + " equal blocks");
}

void Transport::check_swap(const HostValues& mine, const HostValues& theirs, const std::vector<int>& group, const char* operation) {
  if (group.empty()) throw LoomError(std::string(operation) + " over an empty group");
  if (theirs.type != mine.type || theirs.count != mine.count || mine.count % group.size() != 0)
    throw LoomError(std::string(operation) + " over the group " + group_text(group) + ": " + std::to_string(mine.count) +
                    " values given and " + std::to_string(theirs.count) + " expected, in " + std::to_string(group.size()) +
                    " equal blocks of one element type");
}

void Transport::swap_blocks(HostValues mine, HostValues theirs, const std::vector<int>& group) {
  check_swap(mine, theirs, group, "all_to_all");
  const std::size_t k = group.size(), n = mine.count / k, block_bytes = mine.bytes() / k;
  const auto block = [&](HostValues v, std::size_t j) { return HostValues{v.type, static_cast<char*>(v.data) + j * block_bytes, n}; };
  std::vector<Message> sends, receives;
  for (std::size_t j = 0; j < k; ++j) {
    if (group[j] == rank()) {
      if (block_bytes > 0) std::memcpy(block(theirs, j).data, block(mine, j).data, block_bytes);
      continue;
    }
    sends.push_back({group[j], block(mine, j)});
    receives.push_back({group[j], block(theirs, j)});
  }
  move_values(sends, receives);
}

void Transport::check_blocks(const HostValues& block, const HostValues& whole, const std::vector<int>& group, const char* operation) {
  if (group.empty()) throw LoomError(std::string(operation) + " over an empty group");
  if (block.type != whole.type)
    throw LoomError(std::string(operation) + " over the group " + group_text(group) + ": the block and the whole differ in element type");
  if (whole.count != block.count * group.size())
    throw LoomError(std::string(operation) + " over the group " + group_text(group) + ": " + std::to_string(whole.count) +
                    " values are not " + std::to_string(group.size()) + " blocks of " + std::to_string(block.count));
}

void LocalTransport::move_values(const std::vector<Message>& sends, const std::vector<Message>& receives) {
  if (sends.size() != receives.size())
    throw LoomError("LocalTransport::exchange: " + std::to_string(sends.size()) + " messages sent, " + std::to_string(receives.size()) +
                    " received");
  for (std::size_t i = 0; i < sends.size(); ++i) copy_values(sends[i].values, receives[i].values, "exchange");
}

void LocalTransport::gather_values(HostValues mine, HostValues all, const std::vector<int>& group) {
  check_blocks(mine, all, group, "all_gather");
  copy_values(mine, all, "all_gather");
}

void LocalTransport::scatter_sums(HostValues all, HostValues mine, const std::vector<int>& group) {
  check_blocks(mine, all, group, "reduce_scatter");
  copy_values(all, mine, "reduce_scatter");
}

}  // namespace loom::runtime
