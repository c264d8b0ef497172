#pragma once
// The named choices several commands share (docs/design.md §11.11): how the exact reference is
// computed (`--reference`) and which trig library class a claim assumes (`--libm`), each read from
// its one table of names.

#include <string_view>

#include "pev/metric/libm.h"

namespace pev::app {

/// `--reference fast|mpfr`: true for mpfr (the MPFR rows), false for the fast exact reference;
/// throws pev::error quoting `name` and listing the names otherwise.
bool parse_mpfr_reference(std::string_view name);

/// `--libm any|one-ulp|glibc|cr`: the library class a claim assumes (metric/libm.h); throws
/// pev::error quoting `name` and listing the names otherwise.
const metric::libm& parse_libm(std::string_view name);

}  // namespace pev::app
