#pragma once
// Verification results kept between runs, keyed by (rule, axiom set) so that a re-run only
// re-checks what could have changed:
//  - a proof stays valid while every axiom of its unsat core is still present, unchanged (adding
//    axioms never invalidates a proof; removing or editing one re-checks the proofs that used it),
//    decided by the same stale_axiom as every proof record's reader;
//  - a refutation (a concrete counterexample) stays valid while the ops' definitions are unchanged;
//  - an unknown result is re-checked whenever the axiom set changes or the timeout grows.
// Every entry is also tied to the fingerprint of the op, parallel and fused form declarations, and
// to the Loom that computed it.
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "loom/pcg/rule.hpp"

namespace loom::verifier {

// What a result was, or is to be, computed under.
struct CacheContext {
  std::string forms;                          // forms_fingerprint of the library
  std::map<std::string, std::string> axioms;  // name -> axiom_hash of each axiom in use
  unsigned timeout_ms = 0;                    // 0: none
  bool minimal_cores = false;                 // a proof's core must be minimal to be reused
  std::map<std::string, int> checked;         // name -> instances its numeric check passed on

  std::string axiom_set() const;  // fingerprint of the whole axiom set
};

class ResultCache {
 public:
  ResultCache() = default;
  // Reads `path`; a missing file is an empty cache. Throws LoomError naming the file (and the
  // JSON path) when it exists but is not a Loom verification cache.
  static ResultCache load(const std::string& path);
  // verify-cache.json in the user's cache folder (pcg::user_cache_dir).
  static std::string default_path();

  std::optional<pcg::Verification> lookup(const std::string& rule_key, const CacheContext& context) const;
  void store(const std::string& rule_key, const CacheContext& context, const pcg::Verification& result);

  // Writes to a temporary file next to `path` and renames it over: a failed write loses nothing.
  void save(const std::string& path) const;

  std::size_t size() const { return entries_.size(); }

 private:
  std::map<std::string, nlohmann::json> entries_;
};

}  // namespace loom::verifier
