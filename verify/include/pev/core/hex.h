#pragma once
// C99 hexadecimal floating point (%a): the exact text of a double, as worst cases, mismatches and
// counterexamples show their values (e.g. -0x1.0c05ccp-1).

#include <string>

namespace pev {

/// "%a" of v ("0x1.8p+1", "-0x0p+0", "inf", "nan").
std::string hex(double v);
/// "%.17g (%a)": the shortest faithful decimal next to the exact hex, "0.5 (0x1p-1)".
std::string dec_hex(double v);

}  // namespace pev
