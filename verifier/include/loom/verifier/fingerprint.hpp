#pragma once
// Stable 64-bit fingerprints (FNV-1a) of canonical texts, printed as 16 hex digits: the same
// text gives the same fingerprint on every machine and in every run, so they can key a cache file.
#include <map>
#include <string>
#include <string_view>

#include "loom/interpreter/library.hpp"

namespace loom::verifier {

std::string fingerprint(std::string_view text);

// The declaration of one op, parallel form or fused form (signature and body) as canonical text.
std::string form_definition(const spec::Library& library, const std::string& name);

// form_definition of a library's forms, each worked out once: thousands of rules use a few forms.
class FormDefinitions {
 public:
  explicit FormDefinitions(const spec::Library& library) : library_(library) {}
  const std::string& of(const std::string& name);
  const spec::Library& library() const { return library_; }

 private:
  const spec::Library& library_;
  std::map<std::string, std::string> known_;
};

// Fingerprint of every op, parallel form and fused form declaration (signatures and bodies): what
// the encoding and the interpreter's semantics depend on. Axioms and rules do not count.
std::string forms_fingerprint(const spec::Library& library);

}  // namespace loom::verifier
