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
constexpr int kProfileFormatVersion = 1;
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

ProfileDatabase ProfileDatabase::load(const std::string& path) {
  ProfileDatabase db;
  std::ifstream in(path);
  if (!in) return db;
  try {
    const json j = json::parse(in);
    check_format(j, kProfileFormat, kProfileFormatVersion, "Loom profile database");
    reject_unknown_keys(j, "", {"format", "version", "entries"});
    const json& entries = require_array(require(j, "entries", ""), "entries");
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const std::string at = indexed("entries", i);
      require_object(entries[i], at);
      reject_unknown_keys(entries[i], at, {"key", "op", "device", "seconds"});
      Entry e;
      e.op = read_string(require(entries[i], "op", at), member(at, "op"));
      e.device = read_string(require(entries[i], "device", at), member(at, "device"));
      e.seconds = read_number(require(entries[i], "seconds", at), member(at, "seconds"), true);
      db.entries_[read_string(require(entries[i], "key", at), member(at, "key"))] = e;
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
  for (const auto& [key, e] : entries_) entries.push_back({{"key", key}, {"op", e.op}, {"device", e.device}, {"seconds", e.seconds}});
  const json doc = {{"format", kProfileFormat}, {"version", kProfileFormatVersion}, {"entries", std::move(entries)}};
  pcg::write_file_atomically(path, doc.dump(2) + "\n");
}

std::optional<double> ProfileDatabase::seconds(const ProfileKey& key) const {
  auto it = entries_.find(key.to_string());
  if (it == entries_.end()) return std::nullopt;
  return it->second.seconds;
}

void ProfileDatabase::record(const ProfileKey& key, double seconds) {
  if (!(seconds > 0)) throw LoomError("a measured time must be positive, got " + std::to_string(seconds) + " for " + key.to_string());
  entries_[key.to_string()] = Entry{key.op, key.device, seconds};
}

}  // namespace loom::search
