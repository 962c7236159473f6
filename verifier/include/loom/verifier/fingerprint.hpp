#pragma once
// Stable 64-bit fingerprints (FNV-1a) of canonical texts, printed as 16 hex digits: the same
// text gives the same fingerprint on every machine and in every run, so they can key a cache file.
#include <string>
#include <string_view>

#include "loom/interpreter/library.hpp"

namespace loom::verifier {

std::string fingerprint(std::string_view text);

// Fingerprint of every op, parallel form and fused form declaration (signatures and bodies): what
// the encoding and the interpreter's semantics depend on. Axioms and rules do not count.
std::string forms_fingerprint(const spec::Library& library);

}  // namespace loom::verifier
