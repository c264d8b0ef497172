#include "pev/ref/sinusoidal.h"

#include <cmath>
#include <optional>
#include <string>

#include "pev/core/error.h"
#include "pev/ref/rope.h"

namespace pev::ref {
namespace {

real I(std::int64_t v) { return real_from_int(v); }

const sinusoidal_points& points_for(const spec::sinusoidal& s, const recipe& r) {
  const auto& pts = s.layout == spec::sinusoidal_layout::interleaved ? r.sinusoidal_interleaved
                                                                     : r.sinusoidal_blocked;
  if (!pts) throw error("recipe " + std::string(r.name) + " has no sinusoidal pipeline");
  return *pts;
}

}  // namespace

std::vector<real> sinusoidal_frequencies(const spec::sinusoidal& s, const recipe& r) {
  const precision_scope work(precision_bits() + kGuardBits);
  const sinusoidal_points& pts = points_for(s, r);
  const auto d = s.d_model;
  const real b(s.base);
  std::vector<real> w(static_cast<std::size_t>(d), real(0));
  if (s.layout == spec::sinusoidal_layout::interleaved) {
    // ω for column j is b^(−2⌊j/2⌋/d) (HF: np.power(10000, 2 * (j // 2) / dim)).
    for (std::int64_t j = 0; j < d; ++j) {
      const real x = round(pts.frequency, I(2 * (j / 2)) / I(d));
      w[j] = round(pts.frequency, 1 / round(pts.frequency, pow(b, x)));
    }
    return w;
  }
  // Blocked: ω_j = exp(−j·ln(b)/(h − shift)); the step is a host double cast to the tensor's dtype.
  const std::int64_t h = d / 2;
  const real shift(s.freq_shift);
  const rounding host = pts.frequency ? rounding(dtype::fp64) : std::nullopt;
  const real step = round(pts.frequency, round(host, round(host, log(b)) / (I(h) - shift)));
  for (std::int64_t j = 0; j < h; ++j) {
    const real wj = round(pts.frequency, exp(round(pts.frequency, -(I(j) * step))));
    w[j] = wj;
    w[j + h] = wj;
  }
  return w;
}

std::vector<real> sinusoidal_row(const spec::sinusoidal& s, std::int64_t p, const recipe& r) {
  spec::validate(spec::encoding{s});
  const precision_scope work(precision_bits() + kGuardBits);
  const sinusoidal_points& pts = points_for(s, r);
  const auto d = s.d_model;
  const real pos = round(pts.position, I(p));
  std::vector<real> row(static_cast<std::size_t>(d), real(0));
  const bool interleaved = s.layout == spec::sinusoidal_layout::interleaved;
  if (interleaved && pts.divide) {
    // pos / b^(2⌊j/2⌋/d) with the power rounded in the recipe's format.
    const real b(s.base);
    for (std::int64_t j = 0; j < d; ++j) {
      const real P = round(pts.frequency, pow(b, round(pts.frequency, I(2 * (j / 2)) / I(d))));
      const real a = round(pts.angle, pos / P);
      row[j] = round(pts.trig, (j % 2 == 0) ? sin(a) : cos(a));
    }
    return row;
  }
  const auto w = sinusoidal_frequencies(s, r);
  const std::int64_t h = d / 2;
  for (std::int64_t j = 0; j < d; ++j) {
    if (!interleaved && j >= 2 * h) continue;  // odd d: zero padding column
    const real a = round(pts.angle, pos * w[j]);
    const bool use_sin = interleaved ? (j % 2 == 0) : (j < h);
    row[j] = round(pts.trig, use_sin ? sin(a) : cos(a));
  }
  return row;
}

namespace {

/// Row t + offset of the table, checked (pev::error naming the position and the offset).
std::int64_t learned_row_index(const spec::learned& s, std::int64_t t) {
  const std::optional<std::int64_t> i = spec::learned_index(s, t);
  if (!i) {
    const std::int64_t rows = spec::learned_rows(s);
    throw error("learned: position " + std::to_string(t) +
                (s.offset != 0 ? " with offset " + std::to_string(s.offset) : std::string()) +
                " is outside the table (rows 0 … " + std::to_string(rows - 1) + ")");
  }
  return *i;
}

}  // namespace

learned_source learned_source_of(const spec::learned& s, std::int64_t t) {
  const std::int64_t row = learned_row_index(s, t);
  const std::int64_t L = s.num_positions;
  learned_source src;
  if (s.target_positions == 0) {
    src.i0 = src.i1 = row;
    return src;
  }
  // x = num/den exactly (align_corners: t′·(L−1)/(L′−1); else ((2t′+1)·L − L′)/(2L′), clamped at
  // 0): index and remainder in integers (all below 2^70).
  const std::int64_t Lp = s.target_positions;
  __extension__ typedef __int128 i128;
  const i128 num0 = s.align_corners ? i128(row) * (L - 1) : i128(2 * row + 1) * L - Lp;
  const i128 den = s.align_corners ? i128(Lp - 1) : i128(2) * Lp;
  const i128 num = num0 < 0 ? 0 : num0;
  src.i0 = static_cast<std::int64_t>(num / den);
  src.rem = static_cast<std::int64_t>(num % den);
  src.den = static_cast<std::int64_t>(den);
  if (src.i0 >= L - 1) {
    src.i0 = L - 1;
    src.rem = 0;
  }
  src.i1 = src.i0 + 1 < L ? src.i0 + 1 : L - 1;
  return src;
}

std::vector<real> learned_row(const spec::learned& s, std::int64_t t, const recipe& r) {
  if (!r.learned) throw error("recipe " + std::string(r.name) + " has no learned-table pipeline");
  const rounding f = *r.learned;
  const std::int64_t L = s.num_positions;
  const std::int64_t d = s.d_model;
  if (static_cast<std::int64_t>(s.table.size()) != L * d) {
    throw error("learned: the table holds " + std::to_string(s.table.size()) +
                " values, expected " + std::to_string(L * d) + " (num_positions × d_model)");
  }
  std::vector<real> out(static_cast<std::size_t>(d));
  if (s.target_positions == 0 || f == std::nullopt) {
    // The exact value: one division of an exact numerator at the working precision (exact when
    // it is a short dyadic, so ties survive).
    const learned_source src = learned_source_of(s, t);
    const real D = I(src.den);
    for (std::int64_t c = 0; c < d; ++c) {
      const real a(s.table[src.i0 * d + c]);
      if (src.rem == 0) {
        out[c] = a;
        continue;
      }
      const real b(s.table[src.i1 * d + c]);
      out[c] = (a * (D - I(src.rem)) + b * I(src.rem)) / D;
    }
    return out;
  }
  // PyTorch linear interpolation in the recipe's format: source index x of table row t′, then a
  // two-point lerp.
  const std::int64_t Lp = s.target_positions;
  t = learned_row_index(s, t);
  real x;
  if (s.align_corners) {
    const real scale = round(f, round(f, I(L - 1)) / round(f, I(Lp - 1)));
    x = round(f, scale * I(t));
  } else {
    const real scale = round(f, round(f, I(L)) / round(f, I(Lp)));
    x = round(f, round(f, scale * round(f, I(t) + real("0.5"))) - real("0.5"));
    if (x < 0) x = 0;
  }
  std::int64_t i0 = static_cast<std::int64_t>(floor(x).convert_to<long long>());
  if (i0 > L - 1) i0 = L - 1;
  const std::int64_t i1 = i0 + 1 < L ? i0 + 1 : L - 1;
  real lambda = round(f, x - I(i0));
  if (lambda < 0) lambda = 0;
  if (lambda > 1) lambda = 1;
  const real lambda0 = round(f, 1 - lambda);
  for (std::int64_t c = 0; c < d; ++c) {
    const real a(s.table[i0 * d + c]);
    const real b(s.table[i1 * d + c]);
    out[c] = round(f, round(f, lambda0 * a) + round(f, lambda * b));
  }
  return out;
}

}  // namespace pev::ref
