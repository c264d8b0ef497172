// ALiBi plans, T5 buckets and Shaw clipping (the ALiBi row loops are in relative_impl.h).

#include "pev/ref/relative.h"

#include <algorithm>
#include <bit>
#include <boost/multiprecision/gmp.hpp>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "relative_impl.h"

namespace pev::kernel {
namespace detail {

alibi_plan plan_alibi(const spec::alibi& s, strategy st) {
  reject_ggml(st, "alibi");
  spec::validate(spec::encoding{s});
  alibi_plan plan;
  plan.st = st;
  const std::int64_t H = s.num_heads;
  const auto P = static_cast<std::int64_t>(std::bit_floor(static_cast<std::uint64_t>(H)));
  if (st == strategy::accurate) {
    const precision_scope work(std::max(precision_bits(), 200u));
    plan.exact = ref::alibi_slopes(s, ref::exact_recipe());
    for (const real& v : plan.exact) {
      const double hi = round_to<double>(v);
      const double lo = round_to<double>(v - real(hi));
      plan.hi.push_back(hi);
      plan.lo.push_back(lo);
      plan.pow2.push_back(
          lo == 0.0 && (std::bit_cast<std::uint64_t>(hi) & ((std::uint64_t{1} << 52) - 1u)) == 0);
    }
    return plan;
  }
  // BLOOM build_alibi_tensor: base = 2^(−b/P) as a Python double stored in fp32, then
  // torch.pow(base, h) in fp32; the remaining heads use the odd powers of 2^(−b/(2P)).
  const auto base = static_cast<float>(std::pow(2.0, -s.max_bias / static_cast<double>(P)));
  for (std::int64_t h = 1; h <= P; ++h) plan.hf.push_back(std::pow(base, static_cast<float>(h)));
  const auto extra = static_cast<float>(std::pow(2.0, -s.max_bias / static_cast<double>(2 * P)));
  for (std::int64_t k = 1; k <= H - P; ++k) {
    plan.hf.push_back(std::pow(extra, static_cast<float>(2 * k - 1)));
  }
  return plan;
}

namespace {

// |r| without overflow at INT64_MIN (buckets saturate long before).
std::int64_t magnitude(std::int64_t v) { return v == INT64_MIN ? INT64_MAX : (v < 0 ? -v : v); }

// Bucket parameters shared by both evaluations: the offset for keys after the query
// (bidirectional), the distance n and the halved bucket count.
struct t5_split {
  std::int64_t nb, offset, n;
};

t5_split split_t5(const spec::t5& s, std::int64_t r) {
  t5_split out{s.num_buckets, 0, 0};
  if (s.bidirectional) {
    out.nb /= 2;
    if (r > 0) out.offset = out.nb;
    out.n = magnitude(r);
  } else {
    out.n = r < 0 ? magnitude(r) : 0;
  }
  return out;
}

// transformers' _relative_position_bucket: the log branch in fp32 (torch.log on a float tensor,
// the host ln(max_distance/e) cast to fp32), truncated; branch first (ln 0 is never taken).
std::int64_t hf_bucket(const spec::t5& s, std::int64_t r) {
  const t5_split t = split_t5(s, r);
  const std::int64_t e = t.nb / 2;
  if (t.n < e) return t.offset + t.n;
  const float ratio = static_cast<float>(t.n) / static_cast<float>(e);
  const auto denom =
      static_cast<float>(std::log(static_cast<double>(s.max_distance) / static_cast<double>(e)));
  const float scaled = std::log(ratio) / denom * static_cast<float>(t.nb - e);
  if (static_cast<double>(scaled) >= static_cast<double>(t.nb)) return t.offset + t.nb - 1;
  const std::int64_t large = e + static_cast<std::int64_t>(std::trunc(scaled));
  return t.offset + std::min(large, t.nb - 1);
}

// Exact buckets: for n ≥ e the offset is the largest k ≤ w − 1 (w = nb − e) with
// ln(n/e)/ln(D/e)·w ≥ k, i.e. (n/e)^w ≥ (D/e)^k. A double estimate decides, except within 1e−6
// of an integer k (where the boundary may be an integer distance, e.g. n = 16, 32, 64 for the
// defaults), which is settled exactly in integers: n^(w/g)·e^(k/g) ≥ D^(k/g)·e^(w/g), g = gcd(k,
// w).
class t5_exact {
 public:
  explicit t5_exact(const spec::t5& s) : s_(s) {}

  std::int64_t bucket(std::int64_t r) {
    const t5_split t = split_t5(s_, r);
    const std::int64_t e = t.nb / 2;
    if (t.n < e) return t.offset + t.n;
    const std::int64_t w = t.nb - e;
    const double y = static_cast<double>(w) * std::log(static_cast<double>(t.n) / e) /
                     std::log(static_cast<double>(s_.max_distance) / e);
    if (y > static_cast<double>(w)) return t.offset + t.nb - 1;  // beyond max_distance: clamped
    std::int64_t k = static_cast<std::int64_t>(std::floor(y));
    const double frac = y - static_cast<double>(k);
    constexpr double kTol = 1e-6;
    if (frac < kTol || 1.0 - frac < kTol) {
      const std::int64_t near = frac < kTol ? k : k + 1;
      k = at_least(t.n, near, e, w) ? near : near - 1;
    }
    return t.offset + e + std::min(k, w - 1);
  }

 private:
  bool at_least(std::int64_t n, std::int64_t k, std::int64_t e, std::int64_t w) {
    if (k <= 0) return true;
    const auto key = std::make_pair(n, k);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    using boost::multiprecision::mpz_int;
    const std::int64_t g = std::gcd(k, w);
    const auto kw = static_cast<unsigned>(w / g);
    const auto kk = static_cast<unsigned>(k / g);
    const mpz_int lhs = pow(mpz_int(n), kw) * pow(mpz_int(e), kk);
    const mpz_int rhs = pow(mpz_int(s_.max_distance), kk) * pow(mpz_int(e), kw);
    const bool ge = lhs >= rhs;
    memo_.emplace(key, ge);
    return ge;
  }

  struct pair_hash {
    std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const {
      return std::hash<std::int64_t>()(p.first) * 31u + std::hash<std::int64_t>()(p.second);
    }
  };
  spec::t5 s_;
  std::unordered_map<std::pair<std::int64_t, std::int64_t>, bool, pair_hash> memo_;
};

}  // namespace
}  // namespace detail

void t5_buckets(const spec::t5& s, strategy st, std::span<const std::int64_t> distances,
                std::span<std::int64_t> out) {
  detail::reject_ggml(st, "t5");
  spec::validate(spec::encoding{s});
  if (out.size() != distances.size()) {
    throw error(fmt::format("t5 buckets: out must hold {} values (one per distance), got {}",
                            distances.size(), out.size()));
  }
  if (st == strategy::accurate) {
    detail::t5_exact exact(s);
    for (std::size_t i = 0; i < distances.size(); ++i) out[i] = exact.bucket(distances[i]);
    return;
  }
  // hf and the table strategies (bucket ids are integers: there is no storage rounding).
  for (std::size_t i = 0; i < distances.size(); ++i) out[i] = detail::hf_bucket(s, distances[i]);
}

void shaw_clip(const spec::shaw& s, std::span<const std::int64_t> distances,
               std::span<std::int64_t> out) {
  spec::validate(spec::encoding{s});
  if (out.size() != distances.size()) {
    throw error(fmt::format("shaw clip: out must hold {} values (one per distance), got {}",
                            distances.size(), out.size()));
  }
  const std::int64_t k = s.max_relative_position;
  for (std::size_t i = 0; i < distances.size(); ++i) {
    out[i] = std::clamp(distances[i], -k, k);
  }
}

}  // namespace pev::kernel
