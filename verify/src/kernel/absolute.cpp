// Planning of the sinusoidal and learned kernels (the row loops are in absolute_impl.h).

#include <algorithm>
#include <array>
#include <cmath>

#include "absolute_impl.h"
#include "pev/ref/sinusoidal.h"
#include "pev/scalar/round.h"

namespace pev::kernel::detail {

sinusoidal_plan plan_sinusoidal(const spec::sinusoidal& s, strategy st) {
  reject_ggml(st, "sinusoidal");
  spec::validate(spec::encoding{s});
  sinusoidal_plan plan;
  plan.spec = s;
  plan.st = st;
  const std::int64_t d = s.d_model;
  const bool interleaved = s.layout == spec::sinusoidal_layout::interleaved;
  plan.pairs = interleaved ? (d + 1) / 2 : d / 2;
  const auto n = static_cast<std::size_t>(plan.pairs);
  if (st == strategy::accurate) {
    // Exact ω from the reference (plan time), as turns.
    const precision_scope work(std::max(precision_bits(), 200u));
    const auto w = ref::sinusoidal_frequencies(s, ref::exact_recipe());
    for (std::size_t k = 0; k < n; ++k)
      plan.turns.push_back(turn_of_angle(w[interleaved ? 2 * k : k]));
    return plan;
  }
  if (interleaved) {
    // DistilBERT / XLM create_sinusoidal_embeddings: np.power(b, 2·(j//2)/dim) in float64.
    for (std::size_t k = 0; k < n; ++k) {
      plan.divisor.push_back(std::pow(s.base, static_cast<double>(2 * k) / static_cast<double>(d)));
    }
    return plan;
  }
  // fairseq get_embedding: step = ln(b)/(h − shift) on the host (double), cast to fp32;
  // ω_k = exp(k·(−step)) with an fp32 product and fp32 exp.
  const auto h = static_cast<double>(d / 2);
  const auto step = static_cast<float>(std::log(s.base) / (h - s.freq_shift));
  for (std::size_t k = 0; k < n; ++k) {
    plan.omega.push_back(std::exp(-(static_cast<float>(k) * step)));
  }
  return plan;
}

learned_row_plan plan_learned_row(const spec::learned& s, strategy st, std::int64_t t) {
  const std::int64_t L = s.num_positions;
  const std::optional<std::int64_t> row = spec::learned_index(s, t);
  if (!row) {
    throw error(fmt::format("learned: position {}{} is outside the table (rows 0 … {})", t,
                            s.offset != 0 ? fmt::format(" with offset {}", s.offset) : "",
                            spec::learned_rows(s) - 1));
  }
  t = *row;  // the row of the (interpolated) table that position t reads
  learned_row_plan rp;
  if (s.target_positions == 0) {
    rp.i0 = t;
    return rp;
  }
  const std::int64_t Lp = s.target_positions;
  if (st == strategy::accurate) {
    // Exact source index x = num/den: align_corners t·(L−1)/(L′−1); otherwise
    // (t + ½)·L/L′ − ½ = ((2t + 1)·L − L′)/(2L′), clamped at 0. All below 2^70: __int128.
    __extension__ typedef __int128 i128;
    i128 num, den;
    if (s.align_corners) {
      num = static_cast<i128>(t) * (L - 1);
      den = Lp - 1;
    } else {
      num = static_cast<i128>(2 * t + 1) * L - Lp;
      den = static_cast<i128>(2) * Lp;
      if (num < 0) num = 0;
    }
    const i128 i0 = num / den;
    const i128 rem = num % den;
    if (i0 >= L - 1 || rem == 0) {
      // An integer index, or the last row (interpolating it with itself): a lookup.
      rp.i0 = static_cast<std::int64_t>(std::min<i128>(i0, L - 1));
      return rp;
    }
    rp.i0 = static_cast<std::int64_t>(i0);
    rp.i1 = rp.i0 + 1;
    rp.k0 = static_cast<double>(den - rem);
    rp.k1 = static_cast<double>(rem);
    rp.den = static_cast<double>(den);
    return rp;
  }
  // PyTorch (upsample_linear1d) in fp32: source index, floor, clamped neighbour, fp32 weights.
  float x;
  if (s.align_corners) {
    const float scale = static_cast<float>(L - 1) / static_cast<float>(Lp - 1);
    x = static_cast<float>(static_cast<double>(scale) * static_cast<double>(t));
  } else {
    const float scale = static_cast<float>(L) / static_cast<float>(Lp);
    x = scale * static_cast<float>(static_cast<double>(t) + 0.5) - 0.5f;
    if (x < 0.0f) x = 0.0f;
  }
  rp.i0 = std::min(static_cast<std::int64_t>(std::floor(x)), L - 1);
  rp.i1 = rp.i0 + 1 < L ? rp.i0 + 1 : L - 1;
  float lambda = static_cast<float>(static_cast<double>(x) - static_cast<double>(rp.i0));
  lambda = std::min(1.0f, std::max(0.0f, lambda));
  rp.w0 = 1.0f - lambda;
  rp.w1 = lambda;
  return rp;
}

template <class T>
T round_interpolation(double a, double b, double k0, double k1, double den) {
  if (a == b || k1 == 0.0) return narrow<T>(a);
  auto extreme = [](double v) {
    const double m = std::fabs(v);
    return m != 0.0 && (m < 0x1p-900 || m > 0x1p900);
  };
  if (extreme(a) || extreme(b)) {
    // Outside the range where Dekker's products are exact: MPFR (not met by real tables).
    const precision_scope work(512);
    return round_to<T>((real(a) * real(k0) + real(b) * real(k1)) / real(den));
  }
  // N = a·k0 + b·k1 exactly as the expansion p0 + e0 + p1 + e1; the value is N/den.
  double p0, e0, p1, e1;
  two_prod(a, k0, p0, e0);
  two_prod(b, k1, p1, e1);
  double s, se;
  two_sum(p0, p1, s, se);
  double nh, nl;
  two_sum(s, se + (e0 + e1), nh, nl);
  // Double-double quotient (nh + nl)/den: error ≤ 2^−98·(|p0| + |p1|)/den, generously.
  const double q = nh / den;
  double qp, qe;
  two_prod(q, den, qp, qe);
  const double q_lo = (((nh - qp) - qe) + nl) / den;
  double qh, ql;
  two_sum(q, q_lo, qh, ql);
  const double err = 0x1p-98 * (std::fabs(p0) + std::fabs(p1)) / den;
  // Near a midpoint m of T, decide exactly: sign(N − m·den) of a six-term expansion.
  auto compare = [&](double m) -> std::optional<int> {
    double mp, me;
    two_prod(m, den, mp, me);
    return expansion_sign(std::array<double, 6>{p0, e0, p1, e1, -mp, -me});
  };
  return *round_checked<T>(qh, ql, err, compare);
}

template float round_interpolation<float>(double, double, double, double, double);
template half round_interpolation<half>(double, double, double, double, double);
template bfloat16 round_interpolation<bfloat16>(double, double, double, double, double);

}  // namespace pev::kernel::detail
