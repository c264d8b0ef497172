#pragma once
// The outputs a replayed rung can produce for one value (docs/numerics.md §13.7): the recipe's
// centre m·cos θ̂ (or sin) with the radius of its fp32 pipeline, and the interval of outputs
// through a vLLM cache and the output's rounding. Shared by the replay of the rows (replay.cpp)
// and the choice of the hf frequencies (replay_choice.cpp), which weigh the values alike.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "pev/impl/contract.h"
#include "pev/metric/error_model.h"
#include "pev/metric/format_round.h"
#include "pev/metric/libm.h"
#include "replay.h"

namespace pev::certify::detail {

using metric::holds_every;
using metric::next_up;
using metric::round_in;

/// The outputs a rung can produce for one value: every one lies in [lo, hi]. ρ ≤ 1 exactly for
/// them: where the interval was rounded to a format, ρ is measured against the midpoints between
/// its ends and the next values out (the first values it cannot produce lie beyond them), so that
/// a value at an end has ρ < 1 and the first one past it ρ > 1.
struct span_of {
  double lo = 0, hi = 0;
  double room_up = 0, room_down = 0;  // from the centre to the limits ρ = 1
};

/// ρ of a value against the outputs a rung can produce around its centre c.
inline double interval_rho(double got, double c, const span_of& s) {
  if (!std::isfinite(got)) return std::numeric_limits<double>::infinity();
  const double dev = got - c;
  if (dev == 0) return 0;
  const double room = dev > 0 ? s.room_up : s.room_down;
  if (!(room > 0)) return std::numeric_limits<double>::infinity();
  return std::fabs(dev) / room;
}

/// What a recipe can produce for one value: centre c = m·cos θ̂ (or sin) and the fp32 pipeline's
/// radius r32 around it — the library class at the fp32 angle θ̂, times m̂, the product's
/// rounding (docs/numerics.md §13.7).
struct centre {
  double c = 0, a = 0, r32 = 0, ulp_c = 0;
};

/// The centre and radius of a value whose exact trig of the fp32 angle is t.
inline centre centre_at(const metric::libm& lib, const replay_magnitude& mg, float angle,
                        double t) {
  const double th = angle;
  centre z;
  z.a = std::fabs(t);
  z.c = mg.m * t;
  // The ulp of the library's result (|t| < 1 unless θ̂ = 0, where it is exact): trig_f32_bound's.
  z.ulp_c = metric::ulp_at_finite(std::min(z.a, 1.0 - 0x1p-25), metric::kF32);
  double r = impl::times_m(metric::trig_error(lib, z.ulp_c, th), {mg.m, mg.err}, z.a);
  // An exact zero (θ̂ = 0: sin) computed as a difference of values of the scale's magnitude: at
  // least ½ ulp_32(m), as the figures' zero floor (docs/numerics.md §13.1).
  if (t == 0) r = std::max(r, metric::ulp_at_finite(mg.m, metric::kF32) / 2);
  // The bound's own evaluation (kSlack) and the double centre's rounding.
  z.r32 = r * (1 + 0x1p-40) + 0x1p-52 * std::fabs(z.c);
  return z;
}

inline centre centre_of(const metric::libm& lib, const replay_magnitude& mg, float angle,
                        bool is_sin) {
  const double th = angle;
  return centre_at(lib, mg, angle, is_sin ? std::sin(th) : std::cos(th));
}

/// The outputs of a rung: the fp32 interval through storage `s` (vLLM's cache), then the output's
/// rounding.
inline span_of interval(const centre& z, const format* s, format out) {
  span_of v{z.c - z.r32, z.c + z.r32, z.r32, z.r32};
  bool rounded = false;
  format last = metric::kF32;
  if (s) {
    v.lo = round_in(v.lo, *s);
    v.hi = round_in(v.hi, *s);
    rounded = true;
    last = *s;
  }
  if (!holds_every(out, last)) {
    v.lo = round_in(v.lo, out);
    v.hi = round_in(v.hi, out);
    rounded = true;
    last = out;
  }
  if (rounded) {
    v.room_up = (v.hi + next_up(v.hi, last)) / 2 - z.c;
    v.room_down = z.c - (v.lo - next_up(-v.lo, last)) / 2;
  }
  return v;
}

constexpr format kStorage[2] = {metric::kF16, metric::kBF16};

/// The angle of pair i at position p in the hf recipe: fl32(fl32(p)·f̂_i).
inline float hf_angle(std::int64_t p, float f) {
  return static_cast<float>(p) * f;  // position_ids.float(), then one fp32 product
}

}  // namespace pev::certify::detail
