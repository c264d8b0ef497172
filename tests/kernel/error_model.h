#pragma once
// The kernels' analytic error models live in the library (pev/sweep/error_model.h, shared with
// the report's sweeps); the kernel tests use them under their historical pev::test names.

#include "pev/sweep/error_model.h"

namespace pev::test {

using sweep::arith;
using sweep::as_f32;
using sweep::clamp01;
using sweep::exact;
using sweep::exponent_f32;
using sweep::f32;
using sweep::f64;
using sweep::format;
using sweep::half_ulp;
using sweep::kBF16;
using sweep::kExpF;
using sweep::kF16;
using sweep::kF32;
using sweep::kF64;
using sweep::kLibm64;
using sweep::kLogF;
using sweep::kPowF;
using sweep::kSinCosF;
using sweep::trig_f32_bound;
using sweep::tv;
using sweep::ulp_at;

}  // namespace pev::test
