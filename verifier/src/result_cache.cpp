#include "loom/verifier/result_cache.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/user_cache.hpp"
#include "loom/verifier/fingerprint.hpp"
#include "loom/verifier/proof_record.hpp"

namespace loom::verifier {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFormat = "loom-verify-cache";
constexpr int kVersion = 3;  // 3: operators' requirements and parallel forms' sizes are facts of a proof

std::string entry_key(const std::string& rule_key, const CacheContext& context) {
  return fingerprint(rule_key + "\n" + context.forms + "\n" + loom_version());
}

bool timeout_covers(unsigned stored, unsigned wanted) { return stored == 0 || (wanted != 0 && stored >= wanted); }

}  // namespace

std::string CacheContext::axiom_set() const {
  std::string all;
  for (const auto& [name, fp] : axioms) all += name + "=" + fp + ";";
  return fingerprint(all);
}

ResultCache ResultCache::load(const std::string& path) {
  ResultCache cache;
  std::ifstream in(path);
  if (!in) return cache;
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw LoomError(path + ": not a JSON file: " + e.what());
  }
  if (!j.is_object() || j.value("format", "") != kFormat || !j.contains("entries") || !j.at("entries").is_object())
    throw LoomError(path + ": not a Loom verification cache (expected {\"format\": \"" + kFormat + "\", \"entries\": {...}})");
  if (j.value("version", 0) != kVersion) return cache;  // another version's cache is simply not used
  for (const auto& [key, entry] : j.at("entries").items()) {
    if (!entry.is_object() || !entry.contains("status") || !entry.at("status").is_string())
      throw LoomError(path + ": entries." + key + ": expected an object with a \"status\"");
    cache.entries_[key] = entry;
  }
  return cache;
}

std::string ResultCache::default_path() { return (fs::path(pcg::user_cache_dir()) / "verify-cache.json").string(); }

std::optional<pcg::Verification> ResultCache::lookup(const std::string& rule_key, const CacheContext& context) const {
  auto it = entries_.find(entry_key(rule_key, context));
  if (it == entries_.end()) return std::nullopt;
  const json& e = it->second;
  try {
    pcg::Verification v;
    v.status = pcg::status_from_name(e.at("status").get<std::string>());
    v.seconds = e.value("seconds", 0.0);
    v.reason = e.value("reason", "");
    v.counterexample = e.value("counterexample", "");
    switch (v.status) {
      case pcg::VerificationStatus::Proved: {
        if (context.minimal_cores && !e.value("minimal_core", false)) return std::nullopt;
        std::vector<pcg::AxiomUse> used;
        for (const auto& u : e.at("core")) used.push_back({u.at(0).get<std::string>(), u.at(1).get<std::string>(), u.at(2).get<int>()});
        if (stale_axiom(used, context.axioms)) return std::nullopt;
        for (const auto& u : used) v.core.push_back(u.name);
        return v;
      }
      case pcg::VerificationStatus::Refuted: return v;
      case pcg::VerificationStatus::Stale: return std::nullopt;
      case pcg::VerificationStatus::Unknown:
        if (e.value("axiom_set", "") != context.axiom_set() || !timeout_covers(e.value("timeout_ms", 0u), context.timeout_ms))
          return std::nullopt;
        return v;
    }
  } catch (const std::exception&) {
    // A malformed entry is recomputed.
  }
  return std::nullopt;
}

void ResultCache::store(const std::string& rule_key, const CacheContext& context, const pcg::Verification& result) {
  json core = json::array();
  for (const auto& name : result.core) {
    auto hash = context.axioms.find(name);
    auto checked = context.checked.find(name);
    core.push_back({name, hash == context.axioms.end() ? "" : hash->second, checked == context.checked.end() ? 0 : checked->second});
  }
  json e = {{"status", pcg::status_name(result.status)}, {"seconds", result.seconds}, {"core", core}};
  if (!result.reason.empty()) e["reason"] = result.reason;
  if (!result.counterexample.empty()) e["counterexample"] = result.counterexample;
  if (result.status == pcg::VerificationStatus::Proved) e["minimal_core"] = context.minimal_cores;
  if (result.status == pcg::VerificationStatus::Unknown) {
    e["axiom_set"] = context.axiom_set();
    e["timeout_ms"] = context.timeout_ms;
  }
  entries_[entry_key(rule_key, context)] = std::move(e);
}

void ResultCache::save(const std::string& path) const {
  json entries = json::object();
  for (const auto& [k, v] : entries_) entries[k] = v;
  const json j = {{"format", kFormat}, {"version", kVersion}, {"entries", std::move(entries)}};
  std::error_code ec;
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  const fs::path temp = target.string() + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(temp);
    if (!out) throw LoomError(temp.string() + ": cannot write the verification cache");
    out << j.dump() << "\n";
    if (!out) throw LoomError(temp.string() + ": cannot write the verification cache");
  }
  fs::rename(temp, target, ec);
  if (ec) throw LoomError(path + ": cannot replace the verification cache: " + ec.message());
}

}  // namespace loom::verifier
