// Whether rotated fp32 q/k follow vLLM's 16-bit cos/sin cache (qk_cache.h; docs/numerics.md
// §13.8).

#include "qk_cache.h"

#include <fmt/format.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>

#include "pev/metric/error_model.h"
#include "pev/metric/ulp.h"
#include "pev/scalar/bfloat16.h"
#include "pev/scalar/half.h"
#include "recover.h"

namespace pev::certify::detail {

namespace {

/// Tokens per chunk of the reading (merged in chunk order: the same counts on any thread count).
constexpr std::size_t kChunkTokens = 256;

/// The distance from v to the nearest value of cache format k (kCacheRungs), plus the ulp_32 that
/// rounding v through fp32 first may add (RN through float can pick the farther neighbour only
/// next to a midpoint, and by less than one ulp_32 of v).
double off_format(double v, std::size_t k) {
  const auto f = static_cast<float>(v);
  const double nearest = k == 0 ? scalar_traits<half>::to_double(half(f))
                                : scalar_traits<bfloat16>::to_double(bfloat16(f));
  return std::fabs(v - nearest) - metric::ulp_at(std::fabs(v), metric::kF32);
}

/// One token's reading into r: every head and pair, against the exact cos/sin (ec, es: per pair,
/// RN_double of m·cos, m·sin) and the bound set b (after its at_position), at position p.
template <class T>
void read_token(const qk_source& q, std::size_t t, std::int64_t p,
                const std::vector<std::pair<std::int64_t, std::int64_t>>& dims,
                std::span<const double> ec, std::span<const double> es,
                const compare::rope_bounds& b, cache_reading& r) {
  const auto H = static_cast<std::size_t>(q.heads), D = static_cast<std::size_t>(q.dim);
  double bc[2], bs[2];
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const double yc = ec[i], ys = es[i];
    b.table(static_cast<std::int64_t>(i), std::fabs(yc), metric::kF32, bc);
    b.table(static_cast<std::int64_t>(i), std::fabs(ys), metric::kF32, bs);
    const auto a = static_cast<std::size_t>(dims[i].first);
    const auto c = static_cast<std::size_t>(dims[i].second);
    for (std::size_t h = 0; h < H; ++h) {
      const std::size_t base = (t * H + h) * D;
      const double x0 = element_value<T>(*q.in, base + a), x1 = element_value<T>(*q.in, base + c);
      const double y0 = element_value<T>(*q.out, base + a), y1 = element_value<T>(*q.out, base + c);
      if (!std::isfinite(y0) || !std::isfinite(y1)) continue;
      // The cos/sin the rotation applied, read back, and how far the fp32 rotation's roundings
      // can have moved them (docs/numerics.md §13.8).
      const auto applied = applied_rotation(x0, x1, y0, y1);
      if (!applied) continue;
      const double cr = applied->cos, sr = applied->sin, n = applied->norm2;
      if (!std::isfinite(cr) || !std::isfinite(sr)) continue;
      const double delta = 0x1p-21 * std::hypot(cr, sr) + 0x1p-146 / std::sqrt(n);
      ++r.read;
      for (std::size_t k = 0; k < 2; ++k) {
        const bool in_format = off_format(cr, k) <= delta && off_format(sr, k) <= delta;
        const auto beyond = [&](double got, double y, double bound) {
          return std::fabs(got - y) > bound * (1 + 0x1p-40) + delta + 0x1p-50 * std::fabs(y);
        };
        const bool off = !in_format;
        const bool out = !off && (beyond(cr, yc, bc[k]) || beyond(sr, ys, bs[k]));
        r.off_grid[k] += off;
        r.beyond[k] += out;
        if ((off || out) && r.first[k] < 0) r.first[k] = p;
      }
    }
  }
}

}  // namespace

void cache_reading::merge(const cache_reading& o) {
  read += o.read;
  for (std::size_t k = 0; k < 2; ++k) {
    off_grid[k] += o.off_grid[k];
    beyond[k] += o.beyond[k];
    if (first[k] < 0) first[k] = o.first[k];
  }
}

template <class T>
cache_reading read_cache(const compare::rope_reference& ref, const metric::libm& lib,
                         std::optional<std::int64_t> seq, const qk_source& q,
                         const std::vector<std::int64_t>& pos, int threads) {
  const spec::rope& s = ref.spec();
  const auto P = static_cast<std::size_t>(s.pairs());
  const std::vector<std::int64_t>& map = ref.stream_of_pair();
  const std::size_t S = map.empty() ? 1 : static_cast<std::size_t>(s.streams());
  const auto tokens = static_cast<std::size_t>(q.tokens);
  std::vector<std::pair<std::int64_t, std::int64_t>> dims(P);
  for (std::size_t i = 0; i < P; ++i) dims[i] = spec::pair_dims(s, static_cast<std::int64_t>(i));
  // The table contracts of vLLM's caches: the hf table rounded to fp16, bf16 (docs/numerics.md
  // §8.6), for an fp32 reading of the cache's values (exact).
  using compare::named_bound;
  const compare::rope_bounds bounds(
      s, seq, ref.attention_factor(),
      {named_bound::of(kCacheRungs[0], kernel::strategy::table_fp16, lib),
       named_bound::of(kCacheRungs[1], kernel::strategy::table_bf16, lib)});
  // One reference and bound set per thread (the fast reference caches a row: not shared).
  tbb::enumerable_thread_specific<ref::fast_rope_reference> refs(ref.fast());
  tbb::enumerable_thread_specific<compare::rope_bounds> local(bounds);
  const std::size_t chunks = (tokens + kChunkTokens - 1) / kChunkTokens;
  std::vector<cache_reading> part(chunks);
  tbb::task_arena arena(threads);
  arena.execute([&] {
    tbb::parallel_for(std::size_t{0}, chunks, [&](std::size_t c) {
      ref::fast_rope_reference& fr = refs.local();
      compare::rope_bounds& b = local.local();
      std::vector<std::int64_t> sp(S);
      std::vector<double> cs(S * P), sn(S * P), ec(P), es(P);
      std::vector<std::int64_t> one(1);
      const std::size_t end = std::min(tokens, (c + 1) * kChunkTokens);
      for (std::size_t t = c * kChunkTokens; t < end; ++t) {
        for (std::size_t st = 0; st < S; ++st) sp[st] = pos[st * tokens + t];
        fr.table<double>(sp, cs, sn);
        if (map.empty()) {
          b.at_position(sp[0]);
          std::copy_n(cs.begin(), P, ec.begin());
          std::copy_n(sn.begin(), P, es.begin());
        } else {
          // MRoPE (docs/encodings.md §4.6): pair i at its stream's position.
          b.at_positions(sp, map);
          for (std::size_t i = 0; i < P; ++i) {
            const auto st = static_cast<std::size_t>(map[i]);
            ec[i] = cs[st * P + i];
            es[i] = sn[st * P + i];
          }
        }
        read_token<T>(q, t, sp[0], dims, ec, es, b, part[c]);
      }
    });
  });
  cache_reading r;
  for (const cache_reading& p : part) r.merge(p);
  return r;
}

std::string cache_note(const cache_reading& r) {
  std::vector<std::string> lines;
  for (std::size_t k = 0; k < 2; ++k) {
    if (r.follows(k)) continue;
    const char* f = k == 0 ? "fp16" : "bf16";
    lines.push_back(
        r.off_grid[k] > 0
            ? fmt::format("{} adds nothing: {} of {} rotations applied cos/sin that are no {} "
                          "values (first at position {})",
                          kCacheRungs[k], r.off_grid[k], r.read, f, r.first[k])
            : fmt::format("{} adds nothing: {} of {} rotations applied {} values beyond the "
                          "table-{} contract of the exact cos/sin (first at position {})",
                          kCacheRungs[k], r.beyond[k], r.read, f, f, r.first[k]));
  }
  if (lines.empty()) return {};
  return fmt::format("the cos/sin the rotations applied, read back (docs/numerics.md §13.8): {}",
                     fmt::join(lines, "; "));
}

template cache_reading read_cache<float>(const compare::rope_reference&, const metric::libm&,
                                         std::optional<std::int64_t>, const qk_source&,
                                         const std::vector<std::int64_t>&, int);
template cache_reading read_cache<double>(const compare::rope_reference&, const metric::libm&,
                                          std::optional<std::int64_t>, const qk_source&,
                                          const std::vector<std::int64_t>&, int);

}  // namespace pev::certify::detail
