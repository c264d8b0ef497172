// Readings of rotated q/k (layout_qk_reading.h).

#include "layout_qk_reading.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace pev::certify::detail {

namespace {

// The dims of pair i in a head: as the spec pairs them, or in the other layout.
std::pair<std::int64_t, std::int64_t> dims_of(const spec::rope& s, std::int64_t i, bool other) {
  if (!other) return spec::pair_dims(s, i);
  return s.layout == spec::rope_layout::neox ? std::pair{2 * i, 2 * i + 1}
                                             : std::pair{i, i + s.pairs()};
}

// Rotations are the same for every head of a token (one table row per position): fitted on the
// head where pair i is largest, as a scaled rotation (c, s), the pair of every other head of the
// token must follow it within 1/16 of its magnitude. Read across heads of one token this holds for
// any RoPE implementation, right or buggy; read across tokens of one head (the other axis order)
// it fails wherever positions differ by more than 1/16 rad·θ_i⁻¹. Tried with the spec's pairs and
// the other layout's (a layout mistake pairs dims the other way) — the better of the two counts.
// Computed token by token in two passes over its heads' rows, each row read whole (a reading whose
// heads are the data's tokens strides across the tensor): the reference heads of every pair in
// both pairings, then the counts. Split across the calling arena's threads by tokens, and a
// token's heads by parts when it has many: the first largest head and sums of counts, the same
// for any split.
template <class T>
agreement head_invariance_in(const axes& r, const io::array& in, const io::array& out,
                             const std::vector<std::int64_t>& perm, const spec::rope& s) {
  using counts = std::array<agreement, 2>;  // the spec's pairing, the other layout's
  const std::int64_t P = s.pairs(), H = r.heads;
  if (H <= 1) return {};
  const auto K = static_cast<std::size_t>(2 * P);  // (pairing, pair) k = other·P + i
  std::vector<std::int64_t> d0(K), d1(K);
  for (std::size_t k = 0; k < K; ++k) {
    const auto [a, c] =
        dims_of(s, static_cast<std::int64_t>(k) % P, k >= static_cast<std::size_t>(P));
    d0[k] = a;
    d1[k] = c;
  }
  struct largest {
    double norm = -1;
    std::int64_t head = 0;
  };
  using largests = std::vector<largest>;
  // Heads [h0, h1) of token (b, t) folded into `v`: each k's first head whose input pair is
  // largest.
  const auto find = [&](std::int64_t b, std::int64_t t, std::int64_t h0, std::int64_t h1,
                        largests& v) {
    for (std::int64_t h = h0; h < h1; ++h) {
      const auto base = static_cast<std::size_t>(r.row(b, t, h) * r.dim);
      for (std::size_t k = 0; k < K; ++k) {
        const double x0 = element_value<T>(in, base + static_cast<std::size_t>(d0[k]));
        const double x1 = element_value<T>(in, base + static_cast<std::size_t>(d1[k]));
        const double n2 = x0 * x0 + x1 * x1;
        if (n2 > v[k].norm) v[k] = {n2, h};
      }
    }
  };
  // Joins the largest of later heads into the earlier ones' (the first on a tie).
  const auto join = [](largests x, const largests& y) {
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (y[k].norm > x[k].norm) x[k] = y[k];
    }
    return x;
  };
  // The counts of heads [h0, h1) of token (b, t) against the rotation (c, sn) fitted on head
  // `ref` of each k (valid[k]: its pair is a usable reference).
  const auto count = [&](std::int64_t b, std::int64_t t, std::int64_t h0, std::int64_t h1,
                         const largests& ref, const std::vector<double>& c,
                         const std::vector<double>& sn, const std::vector<char>& valid, counts& n) {
    for (std::int64_t h = h0; h < h1; ++h) {
      const auto base = static_cast<std::size_t>(r.row(b, t, h) * r.dim);
      for (std::size_t k = 0; k < K; ++k) {
        if (!valid[k] || h == ref[k].head) continue;
        const auto u0 = static_cast<std::size_t>(d0[k]), u1 = static_cast<std::size_t>(d1[k]);
        const double x0 = element_value<T>(in, base + u0), x1 = element_value<T>(in, base + u1);
        const double y0 = element_value<T>(out, base + static_cast<std::size_t>(perm[u0]));
        const double y1 = element_value<T>(out, base + static_cast<std::size_t>(perm[u1]));
        const double e0 = y0 - (c[k] * x0 - sn[k] * x1), e1 = y1 - (sn[k] * x0 + c[k] * x1);
        const double scale2 =
            (c[k] * c[k] + sn[k] * sn[k]) * (x0 * x0 + x1 * x1) + y0 * y0 + y1 * y1;
        if (!(scale2 > 0)) continue;
        agreement& a = n[k < static_cast<std::size_t>(P) ? 0 : 1];
        ++a.samples;
        if (!(e0 * e0 + e1 * e1 <= scale2 / 256)) ++a.off;
      }
    }
  };
  const auto add = [](counts x, const counts& y) {
    for (std::size_t k = 0; k < x.size(); ++k) x[k] += y[k];
    return x;
  };
  constexpr std::int64_t kPart = 4096;  // heads a task reads at least
  const std::int64_t parts = std::max<std::int64_t>(1, kPart / H);
  const counts n = tbb::parallel_reduce(
      tbb::blocked_range<std::int64_t>(0, r.batch * r.tokens, static_cast<std::size_t>(parts)),
      counts{},
      [&](const tbb::blocked_range<std::int64_t>& tokens, counts acc) {
        for (std::int64_t bt = tokens.begin(); bt != tokens.end(); ++bt) {
          const std::int64_t b = bt / r.tokens, t = bt % r.tokens;
          const tbb::blocked_range<std::int64_t> heads(0, H, static_cast<std::size_t>(kPart));
          const largests ref = tbb::parallel_reduce(
              heads, largests(K),
              [&](const tbb::blocked_range<std::int64_t>& hs, largests v) {
                find(b, t, hs.begin(), hs.end(), v);
                return v;
              },
              join);
          // The rotation each k's reference head fits, as before (x·y / |x|²).
          std::vector<double> c(K), sn(K);
          std::vector<char> valid(K, 0);
          for (std::size_t k = 0; k < K; ++k) {
            if (!(ref[k].norm > 0) || !std::isfinite(ref[k].norm)) continue;
            const auto base = static_cast<std::size_t>(r.row(b, t, ref[k].head) * r.dim);
            const auto u0 = static_cast<std::size_t>(d0[k]), u1 = static_cast<std::size_t>(d1[k]);
            const double x0 = element_value<T>(in, base + u0), x1 = element_value<T>(in, base + u1);
            const double y0 = element_value<T>(out, base + static_cast<std::size_t>(perm[u0]));
            const double y1 = element_value<T>(out, base + static_cast<std::size_t>(perm[u1]));
            c[k] = (x0 * y0 + x1 * y1) / ref[k].norm;
            sn[k] = (x0 * y1 - x1 * y0) / ref[k].norm;
            valid[k] = 1;
          }
          acc = add(acc, tbb::parallel_reduce(
                             heads, counts{},
                             [&](const tbb::blocked_range<std::int64_t>& hs, counts m) {
                               count(b, t, hs.begin(), hs.end(), ref, c, sn, valid, m);
                               return m;
                             },
                             add));
        }
        return acc;
      },
      add);
  // The better of the two pairings (the spec's on a tie).
  const auto rate = [](const agreement& g) {
    return g.samples ? static_cast<double>(g.off) / static_cast<double>(g.samples) : 0.0;
  };
  return rate(n[1]) < rate(n[0]) ? n[1] : n[0];
}

// The ratios |output pair|² / |input pair|² of every row, the outputs read at `perm`.
template <class T>
agreement pair_norms_in(const io::array& in, const io::array& out, std::int64_t D,
                        const std::vector<std::int64_t>& perm, const spec::rope& s) {
  std::vector<double> r;
  const std::size_t rows = in.data.size() / sizeof(T) / static_cast<std::size_t>(D);
  for (std::size_t row = 0; row < rows; ++row) {
    const std::size_t base = row * static_cast<std::size_t>(D);
    for (std::int64_t i = 0; i < s.pairs(); ++i) {
      const auto [d0, d1] = spec::pair_dims(s, i);
      const double x0 = element_value<T>(in, base + static_cast<std::size_t>(d0)),
                   x1 = element_value<T>(in, base + static_cast<std::size_t>(d1));
      const double y0 = element_value<T>(
          out, base + static_cast<std::size_t>(perm[static_cast<std::size_t>(d0)]));
      const double y1 = element_value<T>(
          out, base + static_cast<std::size_t>(perm[static_cast<std::size_t>(d1)]));
      const double nx = x0 * x0 + x1 * x1;
      if (!(nx > 0)) continue;  // a zero input pair says nothing about the order
      r.push_back((y0 * y0 + y1 * y1) / nx);
    }
  }
  return ratio_agreement(std::move(r));
}

}  // namespace

std::vector<axes> readings_of(std::vector<std::int64_t> shape, std::int64_t D,
                              std::optional<qk_class> forced) {
  while (shape.size() > 4 && shape.front() == 1) shape.erase(shape.begin());
  std::vector<axes> v;
  v.reserve(3);  // at most three readings
  const std::size_t n = shape.size();
  if (n < 2 || n > 4 || D <= 0) return v;
  const std::int64_t last = shape.back();
  auto add = [&](qk_class c, std::int64_t b, std::int64_t t, std::int64_t h, bool hf) {
    if (!forced || *forced == c) v.push_back({c, b, t, h, D, hf, n});
  };
  if (last == D) {
    if (n == 4) {
      add(qk_class::bhtd, shape[0], shape[2], shape[1], true);
      add(qk_class::bthd, shape[0], shape[1], shape[2], false);
    } else if (n == 3) {
      add(qk_class::bthd, 1, shape[0], shape[1], false);
      add(qk_class::bhtd, 1, shape[1], shape[0], true);
      if (forced) add(qk_class::t_hd, shape[0], shape[1], 1, false);
    } else {
      add(qk_class::t_hd, 1, shape[0], 1, false);
    }
  } else if (last % D == 0 && n <= 3) {
    add(qk_class::t_hd, n == 3 ? shape[0] : 1, shape[n - 2], last / D, false);
  }
  return v;
}

agreement head_invariance(const axes& r, const io::array& in, const io::array& out,
                          const std::vector<std::int64_t>& perm, const spec::rope& s,
                          const std::string& name) {
  return visit_tensor(in, name, [&](auto tag) {
    return head_invariance_in<typename decltype(tag)::type>(r, in, out, perm, s);
  });
}

agreement pair_norms(const io::array& in, const io::array& out,
                     const std::vector<std::int64_t>& perm, const spec::rope& s,
                     const std::string& name) {
  return visit_tensor(in, name, [&](auto tag) {
    return pair_norms_in<typename decltype(tag)::type>(in, out, s.head_dim, perm, s);
  });
}

std::vector<std::int64_t> output_perm(const spec::rope& s, qk_order o) {
  std::vector<std::int64_t> perm(static_cast<std::size_t>(s.head_dim));
  for (std::int64_t j = 0; j < s.head_dim; ++j) perm[static_cast<std::size_t>(j)] = j;
  if (o == qk_order::half_split) {
    for (std::int64_t i = 0; i < s.pairs(); ++i) {
      const auto [a, c] = spec::pair_dims(s, i);
      perm[static_cast<std::size_t>(a)] = i;
      perm[static_cast<std::size_t>(c)] = i + s.pairs();
    }
  }
  return perm;
}

std::shared_ptr<const io::array> canonical(const io::array& a, const axes& r,
                                           const std::vector<std::int64_t>& perm) {
  auto c = std::make_shared<io::array>();
  c->type = a.type;
  c->shape = {r.batch * r.tokens, r.heads, r.dim};
  // Rows already in (batch, token, head) order with their dims in place: the same bytes (a view
  // of a mapped dump is shared, not copied).
  bool in_order = true;
  for (std::size_t j = 0; j < perm.size() && in_order; ++j) {
    in_order = perm[j] == static_cast<std::int64_t>(j);
  }
  for (std::int64_t b = 0, k = 0; b < r.batch && in_order; ++b) {
    for (std::int64_t t = 0; t < r.tokens && in_order; ++t) {
      for (std::int64_t h = 0; h < r.heads && in_order; ++h, ++k) in_order = r.row(b, t, h) == k;
    }
  }
  if (in_order) {
    c->data = a.data;
    return c;
  }
  c->data.resize(a.data.size());
  const std::size_t es = size_of(a.type);
  std::size_t dst = 0;
  for (std::int64_t b = 0; b < r.batch; ++b) {
    for (std::int64_t t = 0; t < r.tokens; ++t) {
      for (std::int64_t h = 0; h < r.heads; ++h) {
        const std::size_t src = static_cast<std::size_t>(r.row(b, t, h) * r.dim);
        for (std::int64_t j = 0; j < r.dim; ++j) {
          std::memcpy(c->data.mutable_data() + (dst + static_cast<std::size_t>(j)) * es,
                      a.data.data() +
                          (src + static_cast<std::size_t>(perm[static_cast<std::size_t>(j)])) * es,
                      es);
        }
        dst += static_cast<std::size_t>(r.dim);
      }
    }
  }
  return c;
}

const char* class_name(qk_class c) {
  return c == qk_class::bhtd ? "bhtd" : c == qk_class::t_hd ? "t(hd)" : "bthd";
}

}  // namespace pev::certify::detail
