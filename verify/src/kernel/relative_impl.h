#pragma once
// Internal: ALiBi plans and template bodies (relative.cpp plans; relative_float.cpp,
// relative_half.cpp and relative_bfloat16.cpp instantiate).

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common.h"
#include "pev/core/error.h"
#include "pev/core/real.h"
#include "pev/kernel/relative.h"
#include "pev/scalar/round.h"

namespace pev::kernel::detail {

__extension__ typedef __int128 i128;

/// Slopes of every head as the strategy computes them.
struct alibi_plan {
  strategy st = strategy::hf;
  std::vector<float> hf;       // hf, table-*: BLOOM's fp32 powf of the fp32 base
  std::vector<real> exact;     // accurate: the exact slopes (MPFR)
  std::vector<double> hi, lo;  // accurate: the exact slopes as double-doubles
  std::vector<bool> pow2;      // accurate: slope is a power of two (exact in hi)
};

alibi_plan plan_alibi(const spec::alibi& s, strategy st);

/// RN_T(s·n) for the exact slope of head h and an integer distance n.
template <class T>
T exact_bias(const alibi_plan& plan, std::size_t h, i128 n) {
  if (n == 0) return narrow<T>(0.0);
  // n = n_hi + n_lo exactly (|n| < 2^65: n_lo is an integer below 2^12).
  const auto n_hi = static_cast<double>(n);
  const auto n_lo = static_cast<double>(n - static_cast<i128>(n_hi));
  const double s_hi = plan.hi[h];
  const double s_lo = plan.lo[h];
  if (plan.pow2[h]) {
    // Scaling by a power of two is exact: the value is s·n_hi + s·n_lo exactly.
    double vh, vl;
    two_sum(s_hi * n_hi, s_hi * n_lo, vh, vl);
    return narrow_dd<T>(vh, vl);
  }
  double p, e;
  two_prod(s_hi, n_hi, p, e);
  double vh, vl;
  two_sum(p, e + (s_hi * n_lo + s_lo * n_hi), vh, vl);
  const double err = 0x1p-98 * std::fabs(p);
  auto compare = [&](double m) -> std::optional<int> {
    if (s_lo == 0.0) {
      // s is a double: s·n − m as an exact five-term expansion.
      double q, qe;
      two_prod(s_hi, n_lo, q, qe);
      return expansion_sign(std::array<double, 5>{p, e, q, qe, -m});
    }
    // An irrational slope: decide with the reference's precision (reached only within 2^−98 of
    // a midpoint).
    const real v = plan.exact[h] * (real(n_hi) + real(n_lo)) - real(m);
    return v > 0 ? 1 : (v < 0 ? -1 : 0);
  };
  return *round_checked<T>(vh, vl, err, compare);
}

template <class T>
void alibi_slopes_impl(const spec::alibi& s, strategy st, std::span<T> out) {
  const alibi_plan plan = plan_alibi(s, st);
  if (out.size() != static_cast<std::size_t>(s.num_heads)) {
    throw error(fmt::format("alibi slopes: out must hold num_heads = {} values, got {}",
                            s.num_heads, out.size()));
  }
  for (std::size_t h = 0; h < out.size(); ++h) {
    out[h] = st == strategy::accurate ? round_to<T>(plan.exact[h])
                                      : store_float<T>(plan.hf[h], storage_of(st));
  }
}

template <class T>
void alibi_bias_impl(const spec::alibi& s, strategy st, std::span<const std::int64_t> queries,
                     std::span<const std::int64_t> keys, std::span<T> out) {
  const alibi_plan plan = plan_alibi(s, st);
  const std::size_t H = static_cast<std::size_t>(s.num_heads);
  const std::size_t Q = queries.size();
  const std::size_t K = keys.size();
  if (out.size() != H * Q * K) {
    throw error(
        fmt::format("alibi bias: out must hold num_heads × queries × keys = {} values, got {}",
                    H * Q * K, out.size()));
  }
  const std::optional<dtype> where = storage_of(st);
  for (std::size_t h = 0; h < H; ++h) {
    for (std::size_t a = 0; a < Q; ++a) {
      T* row = out.data() + (h * Q + a) * K;
      for (std::size_t b = 0; b < K; ++b) {
        const i128 n = static_cast<i128>(keys[b]) - queries[a];
        if (st == strategy::accurate) {
          row[b] = exact_bias<T>(plan, h, n);
        } else {
          // fp32: the slope times the fp32 distance, one rounding.
          row[b] = store_float<T>(plan.hf[h] * static_cast<float>(n), where);
        }
      }
    }
  }
}

}  // namespace pev::kernel::detail

namespace pev::kernel {

template <class T>
void alibi_slopes(const spec::alibi& s, strategy st, std::span<T> out) {
  detail::alibi_slopes_impl(s, st, out);
}

template <class T>
void alibi_bias(const spec::alibi& s, strategy st, std::span<const std::int64_t> queries,
                std::span<const std::int64_t> keys, std::span<T> out) {
  detail::alibi_bias_impl(s, st, queries, keys, out);
}

}  // namespace pev::kernel
