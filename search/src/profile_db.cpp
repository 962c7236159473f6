#include "loom/search/profile_db.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/file_io.hpp"
#include "loom/pcg/json_read.hpp"

namespace loom::search {

using nlohmann::json;
using namespace pcg::json_read;

namespace {

constexpr const char* kProfileFormat = "loom-profile";
constexpr int kProfileFormatVersion = 2;

// A version-1 entry: one measured figure.
ProfileEntry read_entry_v1(const json& j, const std::string& at) {
  reject_unknown_keys(j, at, {"key", "op", "device", "seconds"});
  ProfileEntry e;
  e.op = read_string(require(j, "op", at), member(at, "op"));
  e.device = read_string(require(j, "device", at), member(at, "device"));
  e.measured_seconds = read_number(require(j, "seconds", at), member(at, "seconds"), true);
  return e;
}

ProfileEntry read_entry(const json& j, const std::string& at) {
  reject_unknown_keys(j, at, {"key", "op", "device", "measured_seconds", "simulated_seconds", "samples"});
  ProfileEntry e;
  e.op = read_string(require(j, "op", at), member(at, "op"));
  e.device = read_string(require(j, "device", at), member(at, "device"));
  e.measured_seconds = read_number(require(j, "measured_seconds", at), member(at, "measured_seconds"), true);
  if (j.contains("simulated_seconds")) e.simulated_seconds = read_number(j.at("simulated_seconds"), member(at, "simulated_seconds"), true);
  e.samples = read_int(require(j, "samples", at), member(at, "samples"));
  if (e.samples < 1) fail(member(at, "samples"), "expected a count of at least 1, got " + std::to_string(e.samples));
  return e;
}

}  // namespace

std::string ProfileKey::to_string() const {
  std::string out = op + "{";
  bool first = true;
  for (const auto& [k, v] : attrs) {
    out += (first ? "" : ", ") + k + "=" + std::to_string(v);
    first = false;
  }
  out += "}";
  for (const auto& s : inputs) out += " " + s.to_string();
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
    const bool version_1 = j.is_object() && j.contains("version") && j.at("version") == 1;
    check_format(j, kProfileFormat, version_1 ? 1 : kProfileFormatVersion, "Loom profile database");
    reject_unknown_keys(j, "", {"format", "version", "entries"});
    const json& entries = require_array(require(j, "entries", ""), "entries");
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const std::string at = indexed("entries", i);
      require_object(entries[i], at);
      const std::string key = read_string(require(entries[i], "key", at), member(at, "key"));
      db.entries_[key] = version_1 ? read_entry_v1(entries[i], at) : read_entry(entries[i], at);
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

void ProfileDatabase::record(const ProfileKey& key, double measured_seconds, std::optional<double> simulated_seconds, std::int64_t samples) {
  const std::string text = key.to_string();
  if (!(measured_seconds > 0)) throw LoomError("a measured time must be positive, got " + std::to_string(measured_seconds) + " for " + text);
  if (simulated_seconds && !(*simulated_seconds > 0))
    throw LoomError("a simulated time must be positive, got " + std::to_string(*simulated_seconds) + " for " + text);
  if (samples < 1) throw LoomError("a profile needs at least one sample, got " + std::to_string(samples) + " for " + text);
  auto [it, added] = entries_.try_emplace(text, ProfileEntry{key.op, key.device, measured_seconds, simulated_seconds, samples});
  if (added) return;
  ProfileEntry& e = it->second;
  const auto total = static_cast<double>(e.samples + samples);
  e.measured_seconds = (e.measured_seconds * static_cast<double>(e.samples) + measured_seconds * static_cast<double>(samples)) / total;
  e.samples += samples;
  if (simulated_seconds) e.simulated_seconds = simulated_seconds;
}

}  // namespace loom::search
