#pragma once
// Reading the project's JSON file formats with messages that name the JSON path of a problem.
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/pcg/diagnostic.hpp"

namespace loom::pcg::json_read {

using nlohmann::json;

[[noreturn]] inline void fail(const std::string& path, const std::string& message) {
  throw LoomError(path.empty() ? message : path + ": " + message);
}

inline std::string indexed(const std::string& path, std::size_t index) { return path + "[" + std::to_string(index) + "]"; }

inline std::string member(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }

// Runs `action`, putting `path` in front of each problem the graph reports.
template <typename Action>
inline void at_path(const std::string& path, Action action) {
  try {
    action();
  } catch (const LoomError& e) {
    std::vector<Diagnostic> diagnostics = e.diagnostics();
    for (Diagnostic& d : diagnostics) d.message = path + ": " + d.message;
    throw LoomError(std::move(diagnostics));
  }
}

inline void require_object(const json& j, const std::string& path) {
  if (!j.is_object()) fail(path, "expected an object, got " + j.dump());
}

inline void reject_unknown_keys(const json& j, const std::string& path, std::initializer_list<const char*> known) {
  for (const auto& item : j.items()) {
    bool found = false;
    for (const char* k : known) found = found || item.key() == k;
    if (!found) fail(member(path, item.key()), "unknown key");
  }
}

inline const json& require(const json& j, const std::string& key, const std::string& path) {
  if (!j.contains(key)) fail(path, "missing \"" + key + "\"");
  return j.at(key);
}

inline int read_int(const json& j, const std::string& path) {
  if (!j.is_number_integer()) fail(path, "expected an integer, got " + j.dump());
  if (j.is_number_unsigned()
          ? j.get<std::uint64_t>() > std::numeric_limits<int>::max()
          : (j.get<std::int64_t>() < std::numeric_limits<int>::min() || j.get<std::int64_t>() > std::numeric_limits<int>::max())) {
    fail(path, "integer out of range: " + j.dump());
  }
  return j.get<int>();
}

inline std::string read_string(const json& j, const std::string& path) {
  if (!j.is_string()) fail(path, "expected a string, got " + j.dump());
  return j.get<std::string>();
}

inline bool read_bool(const json& j, const std::string& path) {
  if (!j.is_boolean()) fail(path, "expected true or false, got " + j.dump());
  return j.get<bool>();
}

// A finite number; with `positive`, also above zero.
inline double read_number(const json& j, const std::string& path, bool positive = false) {
  if (!j.is_number()) fail(path, "expected a number, got " + j.dump());
  const double v = j.get<double>();
  if (positive && !(v > 0)) fail(path, "expected a positive number, got " + j.dump());
  return v;
}

inline const json& require_array(const json& j, const std::string& path) {
  if (!j.is_array()) fail(path, "expected an array, got " + j.dump());
  return j;
}

// Converts with the type's own from_json, putting `path` in front of its complaint.
template <typename T>
T read_value(const json& j, const std::string& path) {
  try {
    return j.get<T>();
  } catch (const LoomError& e) {
    fail(path, e.what());
  } catch (const json::exception& e) {
    fail(path, e.what());
  }
}

// Checks the "format" and "version" keys of a versioned document.
inline void check_format(const json& j, const char* format, int version, const char* what) {
  if (!j.is_object()) fail("", std::string("a ") + what + " must be a JSON object, got " + j.type_name());
  const json* f = j.contains("format") ? &j.at("format") : nullptr;
  if (f == nullptr || !f->is_string() || f->get<std::string>() != format) {
    fail("format", std::string("expected \"") + format + "\", got " + (f ? f->dump() : "nothing"));
  }
  if (!j.contains("version")) fail("", "missing \"version\"");
  const json& v = j.at("version");
  if (!v.is_number_integer() || v.get<std::int64_t>() != version) {
    fail("version", "unsupported version " + v.dump() + " (this build reads version " + std::to_string(version) + ")");
  }
}

}  // namespace loom::pcg::json_read
