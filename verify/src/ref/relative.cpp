#include "pev/ref/relative.h"

#include <gmp.h>

#include <bit>
#include <string>

#include "pev/core/error.h"

namespace pev::ref {
namespace {
real I(std::int64_t v) { return real_from_int(v); }

void set_int64(mpz_t z, std::int64_t v) {
  mpz_set_si(z, static_cast<long>(v));  // long is 64-bit on the supported platforms
}

// True when trunc(ln(n/e)/ln(md/e)·w) ≥ j, i.e. (n/e)^w ≥ (md/e)^j, i.e. n^w·e^j ≥ md^j·e^w
// (all positive integers; md > e).
bool t5_reaches(std::int64_t n, std::int64_t e, std::int64_t md, std::int64_t w, std::int64_t j) {
  if (j <= 0) return true;
  mpz_t a, b, t;
  mpz_inits(a, b, t, nullptr);
  set_int64(t, n);
  mpz_pow_ui(a, t, static_cast<unsigned long>(w));
  set_int64(t, e);
  mpz_pow_ui(t, t, static_cast<unsigned long>(j));
  mpz_mul(a, a, t);
  set_int64(t, md);
  mpz_pow_ui(b, t, static_cast<unsigned long>(j));
  set_int64(t, e);
  mpz_pow_ui(t, t, static_cast<unsigned long>(w));
  mpz_mul(b, b, t);
  const bool reaches = mpz_cmp(a, b) >= 0;
  mpz_clears(a, b, t, nullptr);
  return reaches;
}
}  // namespace

std::vector<real> alibi_slopes(const spec::alibi& s, const recipe& r) {
  spec::validate(spec::encoding{s});
  if (!r.alibi) throw error("recipe " + std::string(r.name) + " has no ALiBi pipeline");
  const alibi_points& pts = *r.alibi;
  const std::int64_t H = s.num_heads;
  const std::int64_t P = static_cast<std::int64_t>(std::bit_floor(static_cast<std::uint64_t>(H)));
  const real b(s.max_bias);
  std::vector<real> slopes;
  slopes.reserve(static_cast<std::size_t>(H));
  // base^h with base = 2^(−b/P) (a host scalar) for the first P heads; then the odd powers of
  // 2^(−b/(2P)), i.e. every other slope of the 2P rule.
  const real base = round(pts.power, round(pts.host, pow(real(2), -b / I(P))));
  for (std::int64_t h = 1; h <= P; ++h) {
    slopes.push_back(pts.power == std::nullopt ? real(pow(real(2), -b * I(h) / I(P)))
                                               : round(pts.power, pow(base, I(h))));
  }
  const real extra = round(pts.power, round(pts.host, pow(real(2), -b / I(2 * P))));
  for (std::int64_t k = 1; k <= H - P; ++k) {
    slopes.push_back(pts.power == std::nullopt ? real(pow(real(2), -b * I(2 * k - 1) / I(2 * P)))
                                               : round(pts.power, pow(extra, I(2 * k - 1))));
  }
  return slopes;
}

real alibi_bias(const real& slope, std::int64_t query, std::int64_t key) {
  return slope * (I(key) - I(query));
}

std::int64_t t5_bucket(const spec::t5& s, std::int64_t r, const recipe& rec) {
  if (!rec.t5) throw error("recipe " + std::string(rec.name) + " has no T5 pipeline");
  const rounding f = *rec.t5;
  std::int64_t nb = s.num_buckets;
  std::int64_t ret = 0;
  // |r| without overflow at INT64_MIN: buckets saturate long before.
  auto magnitude = [](std::int64_t v) -> std::int64_t {
    return v == INT64_MIN ? INT64_MAX : (v < 0 ? -v : v);
  };
  std::int64_t n;
  if (s.bidirectional) {
    nb /= 2;
    if (r > 0) ret += nb;
    n = magnitude(r);
  } else {
    n = r < 0 ? magnitude(r) : 0;
  }
  const std::int64_t max_exact = nb / 2;
  // Branch first: the log branch is undefined at n = 0 (transformers evaluates and discards it).
  if (n < max_exact) return ret + n;
  const real ratio = round(f, round(f, I(n)) / round(f, I(max_exact)));
  const rounding host = f ? rounding(dtype::fp64) : std::nullopt;
  const real denom = round(f, round(host, log(round(host, real(s.max_distance) / I(max_exact)))));
  const real scaled =
      round(f, round(f, round(f, log(ratio)) / denom) * round(f, I(nb - max_exact)));
  // Saturate before converting: the clamp to nb − 1 makes larger values irrelevant.
  if (scaled >= I(nb)) return ret + nb - 1;
  std::int64_t k = static_cast<std::int64_t>(trunc(scaled).convert_to<long long>());
  if (f == std::nullopt) {
    // Bucket boundaries are often integers in real arithmetic (n = 16, 32, 64 at the defaults):
    // there the rounded logarithms cannot decide trunc(), so settle it exactly in integers.
    const real nearest = round(scaled);
    if (abs(scaled - nearest) < pow(real(2), -60)) {
      const auto j = static_cast<std::int64_t>(nearest.convert_to<long long>());
      k = t5_reaches(n, max_exact, s.max_distance, nb - max_exact, j) ? j : j - 1;
    }
  }
  std::int64_t large = max_exact + k;
  if (large > nb - 1) large = nb - 1;
  return ret + large;
}

std::int64_t shaw_clip(const spec::shaw& s, std::int64_t r) {
  const std::int64_t k = s.max_relative_position;
  return r < -k ? -k : (r > k ? k : r);
}

}  // namespace pev::ref
