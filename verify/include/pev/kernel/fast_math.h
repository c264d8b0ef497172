#pragma once
// A CPU model of CUDA's fast-math sin/cos (__sinf, __cosf, __sincosf: what -use_fast_math puts in
// place of sinf/cosf), for the mistake catalogue and the tests (docs/numerics.md §5.5). The
// hardware reduces the angle to turns with one fp32 product rounded toward zero,
// t = RZ_32(θ·fl32(1/2π)), and approximates sin(2π·t) (MUFU.SIN/COS) within 2^−21.41 absolute.
// The model takes the same t and evaluates sin(2π·t) in double, rounded to fp32: it reproduces the
// reduction's error, which grows as 1.6e-7·|θ| and is the part that matters past |θ| ≈ 3, and
// differs from the hardware by the approximation alone — measured against an H100's __sincosf on
// 1701 positions × 64 pairs of Llama-3.1's table up to position 2^20: at most 3.33e-7.

#include <cmath>

namespace pev::kernel {

/// The angle in turns as the hardware takes it: RZ_32(θ·fl32(1/2π)) (the product of two floats is
/// exact in double; the rounding toward zero is then one step).
inline float fast_math_turns(float theta) {
  constexpr float kInvTwoPi = static_cast<float>(0.15915494309189535);
  const double x = static_cast<double>(theta) * static_cast<double>(kInvTwoPi);
  float t = static_cast<float>(x);
  if (std::fabs(static_cast<double>(t)) > std::fabs(x)) t = std::nextafter(t, 0.0f);
  return t;
}

/// The model of __cosf(θ) (is_sin false) or __sinf(θ).
inline float fast_math_trig(float theta, bool is_sin) {
  const double a = 2 * 3.141592653589793238462643383 * static_cast<double>(fast_math_turns(theta));
  return static_cast<float>(is_sin ? std::sin(a) : std::cos(a));
}

}  // namespace pev::kernel
