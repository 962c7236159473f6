#include "loom/pcg/parallel_shape.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <utility>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/hash_mix.hpp"

namespace loom::pcg {

namespace {

std::int64_t product(const std::vector<std::int64_t>& values) {
  return std::accumulate(values.begin(), values.end(), std::int64_t{1}, std::multiplies<std::int64_t>());
}

// Product of the values, or false when it does not fit in 64 bits.
bool checked_product(std::initializer_list<const std::vector<std::int64_t>*> groups, std::int64_t& result) {
  result = 1;
  for (const auto* group : groups) {
    for (std::int64_t v : *group) {
      if (__builtin_mul_overflow(result, v, &result)) return false;
    }
  }
  return true;
}

void check_rank(const char* field, const std::vector<std::int64_t>& values, std::size_t rank) {
  if (values.size() != rank) {
    throw LoomError("'" + std::string(field) + "' has " + std::to_string(values.size()) + " entries but the shape has rank " +
                    std::to_string(rank));
  }
}

void check_positive(const char* field, const std::vector<std::int64_t>& values) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (values[i] < 1) {
      throw LoomError("'" + std::string(field) + "[" + std::to_string(i) + "]' must be at least 1, got " + std::to_string(values[i]));
    }
  }
}

void check_positive(const char* field, std::int64_t value) {
  if (value < 1) {
    throw LoomError("'" + std::string(field) + "' must be at least 1, got " + std::to_string(value));
  }
}

std::int64_t read_int(const nlohmann::json& j, const std::string& what) {
  if (!j.is_number_integer()) {
    throw LoomError("'" + what + "' must be an integer, got " + j.dump());
  }
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (j.is_number_unsigned() && j.get<std::uint64_t>() > kMax) {
    throw LoomError("'" + what + "' is too large: " + j.dump());
  }
  return j.get<std::int64_t>();
}

std::vector<std::int64_t> read_ints(const nlohmann::json& j, const std::string& field) {
  if (!j.is_array()) {
    throw LoomError("'" + field + "' must be an array of integers, got " + j.dump());
  }
  std::vector<std::int64_t> out;
  out.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) {
    out.push_back(read_int(j[i], field + "[" + std::to_string(i) + "]"));
  }
  return out;
}

}  // namespace

ParallelShape ParallelShape::unpartitioned(std::vector<std::int64_t> dims) {
  ParallelShape s;
  s.D.assign(dims.size(), 1);
  s.P.assign(dims.size(), 1);
  s.dims = std::move(dims);
  return s;
}

ParallelShape ParallelShape::partitioned(std::vector<std::int64_t> dims, std::vector<std::int64_t> D, std::int64_t V, std::int64_t R) {
  ParallelShape s = unpartitioned(std::move(dims));
  if (!D.empty()) s.D = std::move(D);
  s.V = V;
  s.R = R;
  return s;
}

std::int64_t ParallelShape::tasks() const { return product(D) * V * R; }

std::int64_t ParallelShape::elements() const { return product(dims); }

std::vector<std::int64_t> ParallelShape::piece_dims() const {
  std::vector<std::int64_t> out(dims.size());
  for (std::size_t i = 0; i < dims.size(); ++i) out[i] = dims[i] / (D[i] * P[i]);
  return out;
}

bool ParallelShape::is_unpartitioned() const {
  auto all_one = [](const std::vector<std::int64_t>& v) { return std::all_of(v.begin(), v.end(), [](std::int64_t x) { return x == 1; }); };
  return all_one(D) && all_one(P) && V == 1 && R == 1;
}

void ParallelShape::validate() const {
  check_rank("D", D, dims.size());
  check_rank("P", P, dims.size());
  check_positive("dims", dims);
  check_positive("D", D);
  check_positive("P", P);
  check_positive("V", V);
  check_positive("R", R);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    std::int64_t pieces = 0;
    if (__builtin_mul_overflow(D[i], P[i], &pieces) || dims[i] % pieces != 0) {
      throw LoomError("dimension " + std::to_string(i) + " of size " + std::to_string(dims[i]) +
                      " cannot be cut into D * P = " + std::to_string(D[i]) + " * " + std::to_string(P[i]) + " equal pieces");
    }
  }
  const std::vector<std::int64_t> vr{V, R};
  std::int64_t unused = 0;
  if (!checked_product({&dims}, unused)) {
    throw LoomError("the element count of " + to_string() + " does not fit in 64 bits");
  }
  if (!checked_product({&D, &vr}, unused)) {
    throw LoomError("the task count of " + to_string() + " does not fit in 64 bits");
  }
}

std::string ParallelShape::to_string() const {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(dims[i]);
    if (i < D.size() && D[i] != 1) out += "/" + std::to_string(D[i]);
    if (i < P.size() && P[i] != 1) out += "|" + std::to_string(P[i]);
  }
  out += "]";
  std::string degrees;
  if (V != 1) degrees += "V" + std::to_string(V);
  if (R != 1) degrees += (degrees.empty() ? "R" : ",R") + std::to_string(R);
  if (!degrees.empty()) out += "{" + degrees + "}";
  return out;
}

void to_json(nlohmann::json& j, const ParallelShape& s) {
  j = nlohmann::json{{"dims", s.dims}, {"D", s.D}, {"P", s.P}, {"V", s.V}, {"R", s.R}};
}

// D, P, V and R may be left out and then mean "not parallel", so hand-written shapes stay short.
void from_json(const nlohmann::json& j, ParallelShape& s) {
  if (!j.is_object()) {
    throw LoomError("a parallel shape must be an object with 'dims', got " + j.dump());
  }
  static const std::set<std::string> known{"dims", "D", "P", "V", "R"};
  for (const auto& item : j.items()) {
    if (!known.contains(item.key())) {
      throw LoomError("unknown key '" + item.key() + "' in a parallel shape (expected dims, D, P, V, R)");
    }
  }
  if (!j.contains("dims")) throw LoomError("a parallel shape needs 'dims'");
  ParallelShape out = ParallelShape::unpartitioned(read_ints(j.at("dims"), "dims"));
  if (j.contains("D")) out.D = read_ints(j.at("D"), "D");
  if (j.contains("P")) out.P = read_ints(j.at("P"), "P");
  if (j.contains("V")) out.V = read_int(j.at("V"), "V");
  if (j.contains("R")) out.R = read_int(j.at("R"), "R");
  out.validate();
  s = std::move(out);
}

}  // namespace loom::pcg

std::size_t std::hash<loom::pcg::ParallelShape>::operator()(const loom::pcg::ParallelShape& s) const noexcept {
  using loom::pcg::hash_mix;
  std::uint64_t h = hash_mix(0, s.rank());
  for (std::size_t i = 0; i < s.rank(); ++i) {
    h = hash_mix(h, static_cast<std::uint64_t>(s.dims[i]));
    h = hash_mix(h, static_cast<std::uint64_t>(i < s.D.size() ? s.D[i] : 0));
    h = hash_mix(h, static_cast<std::uint64_t>(i < s.P.size() ? s.P[i] : 0));
  }
  h = hash_mix(h, static_cast<std::uint64_t>(s.V));
  return static_cast<std::size_t>(hash_mix(h, static_cast<std::uint64_t>(s.R)));
}
