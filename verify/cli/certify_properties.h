#pragma once
// The property suites on a live implementation, for `pev certify --plugin/--exec`.

#include <vector>

#include "pev/certify/certify.h"

namespace pev::cli {

std::vector<certify::check> live_property_checks(const impl::live_implementation& im,
                                                 const certify::live_options& lo);

}  // namespace pev::cli
