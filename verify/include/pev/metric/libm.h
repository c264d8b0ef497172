#pragma once
// The accuracy of the math library a pipeline calls: what a recipe does not fix (docs/numerics.md
// §5). A recipe fixes where a pipeline rounds — the dtypes of its frequencies, positions, product,
// table and rotation — and the pipeline's math library (pow, sin, cos, log, exp) varies by
// platform: glibc, SLEEF (PyTorch's vectorised CPU kernels), CUDA's libdevice. The bounds of a
// recipe are derived for a library class, in ulps of the correctly rounded result; certification
// holds a claim to the loosest conforming class by default and measures the library the data
// actually used.

#include <cmath>

namespace pev::metric {

/// A math library's maximum errors, in ulps of the exact result (binary32 functions, and the
/// binary64 functions of host scalar code).
struct libm {
  const char* name;
  double sin_cos;  // sinf, cosf
  double pow;      // powf
  double log;      // logf
  double exp;      // expf
  double f64;      // double pow, log, exp, sin, cos (Python floats, host scalars)
  /// Fast-math classes only: sin/cos err by at most sin_cos_slope·|θ| + sin_cos_abs in absolute
  /// terms (on top of sin_cos ulps), from a reduction of θ that is not exact.
  double sin_cos_slope = 0;
  double sin_cos_abs = 0;
  /// A class outside the conforming ones: a claim accepts it only when asked (--libm).
  bool fast_math = false;
};

/// Correctly rounded (CORE-MATH, LLVM libc's correctly rounded functions).
inline constexpr libm kCorrectlyRounded{"correctly rounded", 0.5, 0.5, 0.5, 0.5, 0.5};
/// glibc 2.36 on x86-64 (ARM optimized-routines code for these binary32 functions): the design
/// bounds, sinf/cosf's 0.5607 also the exhaustive measured maximum (docs/numerics.md §5.1). pev's
/// own kernels call it: their contracts are written for it.
inline constexpr libm kGlibc{"glibc", 0.5607, 0.82, 0.818, 0.502, 1.0};
/// Within one ulp: glibc's manual for x86-64, SLEEF's u10 functions behind PyTorch's vectorised
/// CPU kernels (measured here: 0.92 ulp for cos/sin of RoPE angles).
inline constexpr libm kOneUlp{"≤ 1 ulp (glibc, SLEEF, PyTorch CPU)", 1.0, 1.0, 1.0, 1.0, 1.0};
/// CUDA's libdevice without fast math (CUDA C Programming Guide, mathematical functions appendix:
/// sinf, cosf, expf 2 ulp, logf 1, powf 4; from extensive testing, not guaranteed).
inline constexpr libm kCuda{"≤ 2 ulp trig (CUDA libdevice)", 2.0, 4.0, 1.0, 2.0, 1.0};

/// The library class a certificate accepts by default: any conforming library (the loosest
/// documented class without fast math).
inline constexpr const libm& kAnyConforming = kCuda;

/// CUDA's fast-math intrinsics __sinf, __cosf (what -use_fast_math maps sinf, cosf to): an
/// absolute error of at most 2^−21.41 (sin) and 2^−21.19 (cos) for arguments in [−π, π], "larger
/// otherwise" (CUDA C Programming Guide, intrinsic functions): the constant of kFastMath below,
/// a class no default claim accepts (docs/numerics.md §5.5).
inline constexpr double kFastMathAbs = 4.1800e-7;  // 2^−21.19, rounded up
inline constexpr const char* kFastMathName =
    "fast-math intrinsics (CUDA __sinf/__cosf: absolute 2^-21.19 on [-pi, pi])";

/// The slope of the fast-math class (docs/numerics.md §5.5): __sinf/__cosf reduce θ to turns as
/// RZ_32(θ·fl32(1/2π)) before the hardware's approximation, so the angle they evaluate errs by
/// 2π·(|θ|·|fl32(1/2π) − 1/2π| + ulp_32(θ·fl32(1/2π))) ≤ (4.0343e-8 + 1.1921e-7)·|θ|, rounded up.
inline constexpr double kFastMathSlope = 1.596e-7;
/// Fast-math trig (CUDA __sinf/__cosf/__sincosf, -use_fast_math; the same design as sin.approx and
/// Metal's fast::sin): |t − cos θ̂| ≤ kFastMathSlope·|θ̂| + kFastMathAbs. pow, log and exp are the
/// CUDA class's (fast-math changes them too, but the recipes' frequencies come from the host or
/// from PyTorch, outside the kernel).
inline constexpr libm kFastMath{"fast-math trig (CUDA __sinf/__cosf, -use_fast_math)",
                                0.0,
                                4.0,
                                1.0,
                                2.0,
                                1.0,
                                kFastMathSlope,
                                kFastMathAbs,
                                true};

/// A class's bound on |t − cos θ̂| for an fp32 angle θ̂, `ulp` the fp32 ulp of its result's
/// magnitude: its ulps plus the fast-math terms.
inline double trig_error(const libm& l, double ulp, double angle) {
  return l.sin_cos * ulp + l.sin_cos_slope * std::fabs(angle) + l.sin_cos_abs;
}

/// The library classes in order of accuracy, for naming a measured error.
inline constexpr const libm* kLibmClasses[] = {&kCorrectlyRounded, &kGlibc, &kOneUlp, &kCuda};

/// The tightest class whose sin/cos bound covers a measured maximum trig error in ulps (none:
/// beyond every documented class — fast-math intrinsics, or not the recipe's angles).
inline const libm* trig_class(double measured_ulps) {
  for (const libm* c : kLibmClasses) {
    if (measured_ulps <= c->sin_cos) return c;
  }
  return nullptr;
}

/// The name of the tightest class covering a measured trig error (ulps, and absolute): a class of
/// kLibmClasses, else the fast-math intrinsics when the absolute error is within theirs, else
/// "beyond every documented class".
inline const char* trig_class_name(double measured_ulps, double measured_abs) {
  if (const libm* c = trig_class(measured_ulps)) return c->name;
  if (measured_abs <= kFastMathAbs) return kFastMathName;
  return "beyond every documented class";
}

}  // namespace pev::metric
