#pragma once
// The property suites (pev::prop) on a live implementation as certificate checks: the callback
// certify::live_options::property_checks of `pev certify` and pev's Python module (docs/python.md
// §4, docs/design.md §3.3).

#include <vector>

#include "pev/certify/certify.h"

namespace pev::app {

/// Every property of the claimed family that applies to the claimed accuracy, run with --seed and
/// --property-cases (lo); a failed one holds its shrunk counterexample and the replay command.
std::vector<certify::check> live_property_checks(const impl::live_implementation& im,
                                                 const certify::live_options& lo);

}  // namespace pev::app
