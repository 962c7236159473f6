#include "loom/search/profile_db.hpp"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/file_io.hpp"
#include "loom/pcg/json_read.hpp"
#include "loom/pcg/user_cache.hpp"

namespace loom::search {

using nlohmann::json;
using namespace pcg::json_read;

namespace {

// A version-1 entry: one measured figure.
ProfileEntry read_entry_v1(const json& j, const std::string& at) {
  reject_unknown_keys(j, at, {"key", "op", "device", "seconds"});
  ProfileEntry e;
  e.op = read_string(require(j, "op", at), member(at, "op"));
  e.device = read_string(require(j, "device", at), member(at, "device"));
  e.measured_seconds = read_number(require(j, "seconds", at), member(at, "seconds"), true);
  return e;
}

ProfileEntry read_entry(const json& j, const std::string& at, int version) {
  if (version == 2)
    reject_unknown_keys(j, at, {"key", "op", "device", "measured_seconds", "simulated_seconds", "samples"});
  else if (version == 3)
    reject_unknown_keys(
        j, at, {"key", "op", "device", "measured_seconds", "simulated_seconds", "samples", "backward_seconds", "backward_samples"});
  else
    reject_unknown_keys(
        j, at,
        {"key", "op", "device", "measured_seconds", "simulated_seconds", "samples", "backward_seconds", "backward_samples", "alone"});
  ProfileEntry e;
  e.op = read_string(require(j, "op", at), member(at, "op"));
  e.device = read_string(require(j, "device", at), member(at, "device"));
  e.measured_seconds = read_number(require(j, "measured_seconds", at), member(at, "measured_seconds"), true);
  if (j.contains("simulated_seconds")) e.simulated_seconds = read_number(j.at("simulated_seconds"), member(at, "simulated_seconds"), true);
  e.samples = read_int(require(j, "samples", at), member(at, "samples"));
  if (e.samples < 1) fail(member(at, "samples"), "expected a count of at least 1, got " + std::to_string(e.samples));
  if (j.contains("backward_seconds")) {
    e.backward_seconds = read_number(j.at("backward_seconds"), member(at, "backward_seconds"), true);
    e.backward_samples = read_int(require(j, "backward_samples", at), member(at, "backward_samples"));
    if (e.backward_samples < 1)
      fail(member(at, "backward_samples"), "expected a count of at least 1, got " + std::to_string(e.backward_samples));
  }
  if (j.contains("alone")) e.alone = read_bool(j.at("alone"), member(at, "alone"));
  return e;
}

}  // namespace

ProfileKey layout_change_key(const pcg::ParallelShape& from, const pcg::ParallelShape& to, bool loaded, bool gradient,
                             const std::string& device) {
  return ProfileKey{"layout_change", {{"gradient", gradient ? 1 : 0}, {"loaded", loaded ? 1 : 0}}, {from, to}, device};
}

ProfileKey weight_update_key(const std::string& optimizer, const std::vector<std::int64_t>& box, const std::vector<std::int64_t>& whole,
                             const std::string& device) {
  return ProfileKey{optimizer + "_update", {}, {pcg::ParallelShape::unpartitioned(box), pcg::ParallelShape::unpartitioned(whole)}, device};
}

ProfileKey gradient_accumulation_key(const std::vector<std::int64_t>& whole, const std::string& device) {
  return ProfileKey{"gradient_accumulation", {}, {pcg::ParallelShape::unpartitioned(whole)}, device};
}

ProfileKey loss_key(LossKind loss, const std::vector<std::int64_t>& box, const std::vector<std::int64_t>& whole, bool probabilities,
                    bool rows_shared, const std::string& device) {
  return ProfileKey{loss_name(loss) + "_loss",
                    {{"probabilities", probabilities ? 1 : 0}, {"rows_shared", rows_shared ? 1 : 0}},
                    {pcg::ParallelShape::unpartitioned(box), pcg::ParallelShape::unpartitioned(whole)},
                    device};
}

ProfileKey task_key(const std::string& op, const pcg::AttrMap& attrs, std::vector<pcg::ParallelShape> inputs,
                    const std::vector<bool>& gradients, const std::string& device) {
  ProfileKey key{op, attrs, std::move(inputs), device};
  for (bool taken : gradients)
    if (!taken) key.gradients = gradients;
  return key;
}

std::string user_profile_path(const std::string& machine_name) {
  return (std::filesystem::path(pcg::user_cache_dir()) / "profiles" / (machine_name + ".json")).string();
}

std::string ProfileKey::to_string() const {
  std::string out = op + "{";
  bool first = true;
  for (const auto& [k, v] : attrs) {
    out += (first ? "" : ", ") + k + "=" + std::to_string(v);
    first = false;
  }
  out += "}";
  for (const auto& s : inputs) out += " " + s.to_string();
  std::string without;
  for (std::size_t i = 0; i < gradients.size(); ++i)
    if (!gradients[i]) without += (without.empty() ? "" : ",") + std::to_string(i);
  if (!without.empty()) out += " no-grad " + without;
  return out + " on " + device;
}

std::optional<double> ProfileEntry::roofline_error() const {
  if (!simulated_seconds) return std::nullopt;
  return measured_seconds / *simulated_seconds - 1;
}

ProfileDatabase ProfileDatabase::load(const std::string& path) {
  ProfileDatabase db;
  std::ifstream in(path);
  if (!in) return db;
  try {
    const json j = json::parse(in);
    const bool older = j.is_object() && j.contains("version") && j.at("version").is_number_integer() && j.at("version").get<int>() >= 1 &&
                       j.at("version").get<int>() < kProfileFormatVersion;
    const int version = older ? j.at("version").get<int>() : kProfileFormatVersion;
    check_format(j, kProfileFormat, version, "Loom profile database");
    reject_unknown_keys(j, "", {"format", "version", "entries"});
    const json& entries = require_array(require(j, "entries", ""), "entries");
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const std::string at = indexed("entries", i);
      require_object(entries[i], at);
      const std::string key = read_string(require(entries[i], "key", at), member(at, "key"));
      ProfileEntry entry = version == 1 ? read_entry_v1(entries[i], at) : read_entry(entries[i], at, version);
      if ((version == 4 || version == 5) && entry.alone) continue;
      db.entries_[key] = std::move(entry);
    }
  } catch (const json::parse_error& e) {
    throw LoomError(path + ": not valid JSON: " + e.what());
  } catch (const LoomError& e) {
    throw LoomError(path + ": " + e.what());
  }
  return db;
}

void ProfileDatabase::save(const std::string& path) const {
  json entries = json::array();
  for (const auto& [key, e] : entries_) {
    json entry = {{"key", key}, {"op", e.op}, {"device", e.device}, {"measured_seconds", e.measured_seconds}, {"samples", e.samples}};
    if (e.simulated_seconds) entry["simulated_seconds"] = *e.simulated_seconds;
    if (e.backward_seconds) {
      entry["backward_seconds"] = *e.backward_seconds;
      entry["backward_samples"] = e.backward_samples;
    }
    if (e.alone) entry["alone"] = true;
    entries.push_back(std::move(entry));
  }
  const json doc = {{"format", kProfileFormat}, {"version", kProfileFormatVersion}, {"entries", std::move(entries)}};
  pcg::write_file_atomically(path, doc.dump(2) + "\n");
}

const ProfileEntry* ProfileDatabase::find(const ProfileKey& key) const {
  auto it = entries_.find(key.to_string());
  return it == entries_.end() ? nullptr : &it->second;
}

std::optional<double> ProfileDatabase::seconds(const ProfileKey& key) const {
  const ProfileEntry* e = find(key);
  if (e == nullptr) return std::nullopt;
  return e->measured_seconds;
}

std::optional<double> ProfileDatabase::backward_seconds(const ProfileKey& key) const {
  const ProfileEntry* e = find(key);
  if (e == nullptr) return std::nullopt;
  return e->backward_seconds;
}

namespace {

void check_sample(double measured_seconds, std::int64_t samples, const std::string& text) {
  if (!(measured_seconds > 0))
    throw LoomError("a measured time must be positive, got " + std::to_string(measured_seconds) + " for " + text);
  if (samples < 1) throw LoomError("a profile needs at least one sample, got " + std::to_string(samples) + " for " + text);
}

// The mean over `count` samples averaging `mean` and `added` more averaging `seconds`.
double pooled_mean(double mean, std::int64_t count, double seconds, std::int64_t added) {
  return (mean * static_cast<double>(count) + seconds * static_cast<double>(added)) / static_cast<double>(count + added);
}

}  // namespace

void ProfileDatabase::record(const ProfileKey& key, double measured_seconds, std::optional<double> simulated_seconds, std::int64_t samples,
                             bool alone) {
  const std::string text = key.to_string();
  check_sample(measured_seconds, samples, text);
  if (simulated_seconds && !(*simulated_seconds > 0))
    throw LoomError("a simulated time must be positive, got " + std::to_string(*simulated_seconds) + " for " + text);
  auto [it, added] =
      entries_.try_emplace(text, ProfileEntry{key.op, key.device, measured_seconds, simulated_seconds, samples, std::nullopt, 0, alone});
  if (added) return;
  ProfileEntry& e = it->second;
  e.alone = e.alone && alone;
  e.measured_seconds = pooled_mean(e.measured_seconds, e.samples, measured_seconds, samples);
  e.samples += samples;
  if (simulated_seconds) e.simulated_seconds = simulated_seconds;
}

void ProfileDatabase::record_backward(const ProfileKey& key, double measured_seconds, std::int64_t samples) {
  const std::string text = key.to_string();
  check_sample(measured_seconds, samples, text);
  auto it = entries_.find(text);
  if (it == entries_.end()) throw LoomError("a backward time for " + text + ", which has no forward time recorded");
  ProfileEntry& e = it->second;
  e.backward_seconds =
      e.backward_seconds ? pooled_mean(*e.backward_seconds, e.backward_samples, measured_seconds, samples) : measured_seconds;
  e.backward_samples += samples;
}

}  // namespace loom::search
