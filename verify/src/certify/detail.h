#pragma once
// Internals shared by the certify sources.

#include <string>
#include <string_view>

#include "pev/certify/certify.h"

namespace pev::certify::detail {

/// Grades the certificate from its checks, checks the claim, and settles the diagnosis (sorted
/// explanations, the named mistake; none when certified). Called again after checks are added.
void finish(certificate& cert);

/// SHA-256 of a byte string, lowercase hex.
std::string sha256_text(std::string_view bytes);

}  // namespace pev::certify::detail
