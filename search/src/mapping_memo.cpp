#include "mapping_memo.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/hash_mix.hpp"

namespace loom::search::mapping {

namespace {

constexpr std::size_t kMostIndexed = std::numeric_limits<std::uint32_t>::max();

void check_indexable(std::size_t size, std::size_t more) {
  if (size + more > kMostIndexed)
    throw LoomError("the machine mapping kept more sub-problems than it can index (" + std::to_string(size) +
                    " entries); run the search on fewer devices, or on smaller segments");
}

}  // namespace

std::uint64_t hash_of_block(int id, int first, int count, std::uint64_t memory_scale) {
  const std::uint64_t h = pcg::hash_mix(static_cast<std::uint64_t>(static_cast<std::uint32_t>(id)), memory_scale);
  return pcg::hash_mix(h, (static_cast<std::uint64_t>(static_cast<std::uint32_t>(first)) << 32) | static_cast<std::uint32_t>(count));
}

SubProblem& SubProblem::hashed() {
  std::uint64_t h = hash_of_block(content, first, count, memory_scale);
  for (int b : boundary) h = pcg::hash_mix(h, static_cast<std::uint32_t>(b));
  hash = h;
  return *this;
}

bool Memo::Equal::operator()(const Key& a, const SubProblem* b) const {
  if (a.hash != b->hash || a.first != b->first || a.count != b->count || a.memory_scale != b->memory_scale ||
      a.boundary_size != b->boundary.size())
    return false;
  const int* data = boundaries->data() + a.boundary_at;
  return std::equal(b->boundary.begin(), b->boundary.end(), data);
}

bool Memo::Equal::operator()(const Key& a, const Key& b) const {
  const SubProblem kept{
      b.content, b.first, b.count, b.memory_scale, std::span<const int>(boundaries->data() + b.boundary_at, b.boundary_size), b.hash};
  return (*this)(a, &kept);
}

std::optional<Solution> Memo::find(const SubProblem& p) const {
  if (static_cast<std::size_t>(p.content) >= tables_.size()) return std::nullopt;
  const Table& table = tables_[static_cast<std::size_t>(p.content)];
  auto it = table.find(&p);
  if (it == table.end()) return std::nullopt;
  const Value& v = it->second;
  return Solution{v.cost, v.choice, std::span<const int>(sizes_.data() + v.sizes_at, v.sizes_size)};
}

Memo::Key Memo::enter(const SubProblem& p) {
  check_indexable(boundaries_.size(), p.boundary.size());
  const Key key{p.hash,
                p.content,
                p.first,
                p.count,
                p.memory_scale,
                static_cast<std::uint32_t>(boundaries_.size()),
                static_cast<std::uint32_t>(p.boundary.size())};
  boundaries_.insert(boundaries_.end(), p.boundary.begin(), p.boundary.end());
  const auto content = static_cast<std::size_t>(p.content);
  while (tables_.size() <= content) tables_.emplace_back(0, Hash{}, Equal{&boundaries_});
  tables_[content].emplace(key, Value{kNoPlan, Choice{}, 0, 0});
  ++open_;
  return key;
}

void Memo::settle(const Key& key, double cost, Choice choice, std::span<const int> split_sizes) {
  check_indexable(sizes_.size(), split_sizes.size());
  Value& v = tables_[static_cast<std::size_t>(key.content)].find(key)->second;
  v = {cost, choice, static_cast<std::uint32_t>(sizes_.size()), static_cast<std::uint32_t>(split_sizes.size())};
  sizes_.insert(sizes_.end(), split_sizes.begin(), split_sizes.end());
  --open_;
}

void Memo::clear() {
  tables_.clear();
  open_ = 0;
  boundaries_.clear();
  sizes_.clear();
}

}  // namespace loom::search::mapping
