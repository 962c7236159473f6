#pragma once
// Stable 64-bit fingerprints (FNV-1a) of canonical texts, printed as 16 hex digits: the same
// text gives the same fingerprint on every machine and in every run, so they can key a cache file.
#include <string>
#include <string_view>

#include "loom/interpreter/library.hpp"

namespace loom::verifier {

std::string fingerprint(std::string_view text);

// The declaration of one op, parallel form or fused form (signature and body) as canonical text.
std::string form_definition(const spec::Library& library, const std::string& name);

// Fingerprint of every op, parallel form and fused form declaration (signatures and bodies): what
// the encoding and the interpreter's semantics depend on. Axioms and rules do not count.
std::string forms_fingerprint(const spec::Library& library);

}  // namespace loom::verifier
