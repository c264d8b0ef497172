// Finding a RoPE table and rotated q/k in a dump, and how they are laid out (layout.h).

#include "layout.h"

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <set>

#include "pev/core/error.h"

namespace pev::certify::detail {

namespace {

// ---- Shapes and names -------------------------------------------------------------------------

// Tensors of the dump's other roles (docs/design.md §6.1): never read as a table.
bool is_role_name(const std::string& n) {
  static const std::set<std::string> roles = {"positions",
                                              "position_ids",
                                              "qk_positions",
                                              "inv_freq",
                                              "attention_factor",
                                              "attention_scaling",
                                              "mscale",
                                              "q_in",
                                              "q_out",
                                              "k_in",
                                              "k_out"};
  return roles.count(n) > 0;
}

// The shape without its size-1 dimensions before the last `keep` ones: [1, P, rot] → [P, rot],
// [B, 1, P, rot] (unsqueezed for the heads) → [B, P, rot]; the last `keep` stay, even of size 1.
std::vector<std::int64_t> drop_ones(const std::vector<std::int64_t>& shape, std::size_t keep) {
  std::vector<std::int64_t> v;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1 && i + keep < shape.size()) continue;
    v.push_back(shape[i]);
  }
  return v;
}

// Whether every value of `a` ([rows, 2·pairs]) equals its duplicate: halves (j, j + pairs) or
// repeated (2i, 2i + 1). Compared as encodings.
bool duplicates_equal(const io::array& a, std::int64_t rows, std::int64_t pairs, bool halves) {
  const std::size_t es = size_of(a.type);
  const std::byte* base = a.data.data();
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < pairs; ++i) {
      const std::int64_t j0 = halves ? i : 2 * i, j1 = halves ? i + pairs : 2 * i + 1;
      const std::byte* x = base + static_cast<std::size_t>(r * 2 * pairs + j0) * es;
      const std::byte* y = base + static_cast<std::size_t>(r * 2 * pairs + j1) * es;
      if (std::memcmp(x, y, es) != 0) return false;
    }
  }
  return true;
}

// Whether every batch of `a` (its bytes split into `batch` equal blocks) equals the first.
bool batches_equal(const io::array& a, std::int64_t batch) {
  if (batch <= 1) return true;
  const std::size_t block = a.data.size() / static_cast<std::size_t>(batch);
  for (std::int64_t b = 1; b < batch; ++b) {
    if (std::memcmp(a.data.data(), a.data.data() + static_cast<std::size_t>(b) * block, block) !=
        0) {
      return false;
    }
  }
  return true;
}

// ---- Evidence from the data -------------------------------------------------------------------

// How many samples of a reading agree with what a rotation implies, and how many do not. A reading
// fits when at most one sample in a thousand disagrees (none should: the tolerance of each test is
// 16 to 32 times the rounding error of a 16-bit output, docs/certify.md §4).
struct agreement {
  std::uint64_t samples = 0, off = 0;
  bool fits() const { return off * 1000 <= samples; }
  agreement& operator+=(const agreement& o) {
    samples += o.samples;
    off += o.off;
    return *this;
  }
};

// The norms of rotated pairs: a rotation by an angle and a common factor m keeps |pair|² / |input
// pair|² (or, for a table, cos² + sin²) the same for every pair and position, up to the output's
// rounding (relative 2^−7 for bf16). `ratios` agree when within 1/8 of their median; a reading
// whose pairs are not the data's mixes two pairs and spreads them by O(1).
agreement ratio_agreement(std::vector<double> ratios) {
  agreement a;
  std::vector<double> finite;
  for (double r : ratios) {
    if (std::isfinite(r)) finite.push_back(r);
  }
  a.samples = ratios.size();
  a.off = ratios.size() - finite.size();
  if (finite.empty()) return a;
  std::nth_element(finite.begin(), finite.begin() + static_cast<std::ptrdiff_t>(finite.size() / 2),
                   finite.end());
  const double median = finite[finite.size() / 2];
  for (double r : finite) {
    if (!(std::fabs(r - median) <= median / 8)) ++a.off;
  }
  return a;
}

// A table read as (cos, sin) = (row[first(i)], row[second(i)]) for every pair i of every row.
template <class First, class Second>
agreement table_norms(const std::vector<double>& v, std::int64_t rows, std::int64_t width,
                      std::int64_t pairs, First first, Second second) {
  std::vector<double> r;
  r.reserve(static_cast<std::size_t>(rows * pairs));
  for (std::int64_t row = 0; row < rows; ++row) {
    for (std::int64_t i = 0; i < pairs; ++i) {
      const double c = v[static_cast<std::size_t>(row * width + first(i))];
      const double s = v[static_cast<std::size_t>(row * width + second(i))];
      r.push_back(c * c + s * s);
    }
  }
  return ratio_agreement(std::move(r));
}

// The dims of pair i in a head: as the spec pairs them, or in the other layout.
std::pair<std::int64_t, std::int64_t> dims_of(const spec::rope& s, std::int64_t i, bool other) {
  if (!other) return spec::pair_dims(s, i);
  return s.layout == spec::rope_layout::neox ? std::pair{2 * i, 2 * i + 1}
                                             : std::pair{i, i + s.pairs()};
}

// ---- q/k readings -----------------------------------------------------------------------------

// The three layout classes of q/k: thd and bthd are one (with or without the batch axis).
enum class qk_class { bhtd, bthd, t_hd };

qk_class class_of(qk_layout l) {
  return l == qk_layout::bhtd   ? qk_class::bhtd
         : l == qk_layout::t_hd ? qk_class::t_hd
                                : qk_class::bthd;
}

// One reading of a q/k tensor's shape: batch × tokens × heads rows of D values.
struct axes {
  qk_class cls = qk_class::bthd;
  std::int64_t batch = 1, tokens = 0, heads = 0, dim = 0;
  bool heads_first = false;  // [B, H, T, D]
  std::size_t rank = 0;      // of the shape as dumped (after extra leading 1s)

  // The flat row (of D values) of token t of batch b, head h.
  std::int64_t row(std::int64_t b, std::int64_t t, std::int64_t h) const {
    return heads_first ? (b * heads + h) * tokens + t : (b * tokens + t) * heads + h;
  }
  qk_layout layout() const {
    switch (cls) {
      case qk_class::bhtd:
        return qk_layout::bhtd;
      case qk_class::t_hd:
        return qk_layout::t_hd;
      case qk_class::bthd:
        break;
    }
    return rank == 4 ? qk_layout::bthd : qk_layout::thd;
  }
  // "[B=1, H=4, T=512, D=128]"
  std::string text() const {
    const std::string b = batch > 1 || rank == 4 || (cls == qk_class::t_hd && rank == 3)
                              ? fmt::format("B={}, ", batch)
                              : "";
    switch (cls) {
      case qk_class::bhtd:
        return fmt::format("[{}H={}, T={}, D={}]", b, heads, tokens, dim);
      case qk_class::bthd:
        return fmt::format("[{}T={}, H={}, D={}]", b, tokens, heads, dim);
      case qk_class::t_hd:
        return fmt::format("[{}T={}, H·D={}·{}]", b, tokens, heads, dim);
    }
    return "";
  }
};

// The readings of a tensor's shape (D = head_dim last): every class that fits, or with `forced`
// that class only (t(hd) of a [B, T, D] tensor, one head, only when forced).
std::vector<axes> readings_of(std::vector<std::int64_t> shape, std::int64_t D,
                              std::optional<qk_class> forced) {
  while (shape.size() > 4 && shape.front() == 1) shape.erase(shape.begin());
  std::vector<axes> v;
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
agreement head_invariance(const axes& r, const io::array& in, const io::array& out,
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
agreement pair_norms(const io::array& in, const io::array& out, std::int64_t D,
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

// The dim of the dumped output that holds canonical dim j (the inputs' pair order): the identity,
// or for half-split outputs pair i's two values at (i, i + pairs).
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

// `a` ([…, D] rows in the reading's order) as [tokens, heads, D] in (batch, token, head) order,
// each row's dims taken from `perm`.
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

}  // namespace

// ---- Tables -------------------------------------------------------------------------------------

table_source find_rope_table(const dump& d, const spec::rope& s,
                             std::optional<table_layout> forced) {
  const std::int64_t pairs = s.pairs(), rot = s.rotary_dim;
  table_source t;
  std::string cos_name, sin_name, cache_name, pairs_name, flat_name;
  const io::array* cos_t = find_any(d, {"cos", "cos_cached"}, &cos_name);
  const io::array* sin_t = find_any(d, {"sin", "sin_cached"}, &sin_name);
  const io::array* cache = find_any(d, {"cos_sin_cache"}, &cache_name);
  const io::array* pairs_t = find_any(d, {"table", "freqs_cis", "cos_sin"}, &pairs_name);
  bool pairs_by_name = pairs_t != nullptr;
  // A lone [P, rot] tensor of another name: [cos | sin] rows or flattened (cos, sin) pairs.
  const io::array* flat = nullptr;
  if (!pairs_t && !(cos_t && sin_t) && !cache) {
    for (const auto& [name, a] : d.tensors) {
      if (is_role_name(name) || !is_float(a.type)) continue;
      const auto sh = drop_ones(a.shape, 3);
      if ((sh.size() == 3 || sh.size() == 4) && sh[sh.size() - 2] == pairs && sh.back() == 2) {
        if (pairs_t) throw error("more than one [P, pairs, 2] tensor: name the table 'table'");
        pairs_t = &a;
        pairs_name = name;
      }
    }
    if (!pairs_t) {
      for (const auto& [name, a] : d.tensors) {
        if (is_role_name(name) || !is_float(a.type)) continue;
        const auto sh = drop_ones(a.shape, 2);
        if ((sh.size() == 2 || sh.size() == 3) && sh.back() == rot) {
          if (flat) {
            throw error(fmt::format(
                "tensors '{}' and '{}' are both [P, {}]: name the table ('cos_sin_cache' for "
                "[cos | sin] rows, 'table' for (cos, sin) pairs, or 'cos' and 'sin')",
                flat_name, name, rot));
          }
          flat = &a;
          flat_name = name;
        }
      }
    }
  }
  table_layout l = table_layout::separate;
  std::string by;  // what decided the layout
  if (forced) {
    l = *forced;
    by = "--layout";
    // A lone [P, rot] tensor is the table the option names.
    if (flat && l == table_layout::vllm) cache = flat, cache_name = flat_name;
    if (flat && l == table_layout::pairs) pairs_t = flat, pairs_name = flat_name;
  } else if (cos_t && sin_t) {
    const auto sh = drop_ones(cos_t->shape, 2);
    l = !sh.empty() && sh.back() == rot && rot != pairs ? table_layout::halves
                                                        : table_layout::separate;
    by = fmt::format("the names '{}' and '{}' and their width", cos_name, sin_name);
  } else if (cache) {
    l = table_layout::vllm;
    by = "the name 'cos_sin_cache'";
  } else if (pairs_t) {
    l = table_layout::pairs;
    by = pairs_by_name ? fmt::format("the name '{}'", pairs_name)
                       : fmt::format("the shape of '{}' [P, {}, 2]", pairs_name, pairs);
  } else if (flat) {
    // [cos | sin] (vLLM's cache, ggml's NEOX order) or (cos, sin) interleaved (ggml's NORMAL
    // order): the reading whose pairs all have the same cos² + sin² (= m²) is the data's.
    const std::vector<double> v = flat->to_doubles();
    const std::int64_t rows = static_cast<std::int64_t>(v.size()) / rot;
    const agreement as_vllm = table_norms(
        v, rows, rot, pairs, [](std::int64_t i) { return i; },
        [&](std::int64_t i) { return i + pairs; });
    const agreement as_pairs = table_norms(
        v, rows, rot, pairs, [](std::int64_t i) { return 2 * i; },
        [](std::int64_t i) { return 2 * i + 1; });
    if (pairs == 1 || (as_vllm.fits() && !as_pairs.fits())) {
      l = table_layout::vllm;
    } else if (as_pairs.fits() && !as_vllm.fits()) {
      l = table_layout::pairs;
    } else {
      throw error(fmt::format(
          "tensor '{}' {} is a [P, {}] table that can be read two ways, and the data {}: name "
          "the layout with --layout vllm ([cos | sin] per row: vLLM's cos_sin_cache, ggml's "
          "NEOX order) or --layout pairs ((cos, sin) pairs: ggml's NORMAL order and its cache)",
          flat_name, io::shape_string(flat->shape), rot,
          as_vllm.fits() ? "fits both (every pair has the same cos² + sin² either way)"
                         : "fits neither (cos² + sin² differs between pairs either way)"));
    }
    pairs_t = flat;
    pairs_name = flat_name;
    if (l == table_layout::vllm) cache = flat, cache_name = flat_name;
    by = pairs == 1 ? fmt::format("the shape of '{}' (one pair: both readings agree)", flat_name)
                    : fmt::format(
                          "the data of '{}': only this reading gives every pair the same "
                          "cos² + sin²",
                          flat_name);
  } else {
    throw error(fmt::format(
        "no RoPE cos/sin table in the dump (expected tensors 'cos' and 'sin', 'cos_sin_cache' or "
        "'table'/'freqs_cis' [P, pairs, 2], or rotated q_in/q_out, k_in/k_out [T, H, head_dim] "
        "(or [B, H, T, D], [B, T, H, D], [T, H·D])); it holds {}",
        tensor_list(d)));
  }
  t.detected = !forced;
  // Rows (every batch's together) of a [P, width] or [B, P, width] tensor.
  auto rows_of = [&](const io::array* a, const std::string& name, std::int64_t width,
                     std::int64_t& batch) {
    const auto sh = drop_ones(a->shape, 2);
    if (sh.size() == 2 && sh[1] == width) {
      batch = 1;
      return sh[0];
    }
    if (sh.size() == 3 && sh[2] == width) {
      batch = sh[0];
      return sh[0] * sh[1];
    }
    throw error(fmt::format(
        "tensor '{}' has shape {}, expected [P, {}] (or [B, P, {}] with a batch) for the {} "
        "layout (rotary_dim {}, {} pairs)",
        name, io::shape_string(a->shape), width, width, to_string(l), rot, pairs));
  };
  std::string read_as;
  switch (l) {
    case table_layout::separate:
    case table_layout::halves:
    case table_layout::repeated: {
      if (!cos_t || !sin_t) {
        throw error(fmt::format("--layout {}: the dump needs tensors 'cos' and 'sin'; it holds {}",
                                to_string(l), tensor_list(d)));
      }
      if (cos_t->type != sin_t->type) {
        throw error(fmt::format("tensors '{}' ({}) and '{}' ({}) have different dtypes", cos_name,
                                io::safetensors_name(cos_t->type), sin_name,
                                io::safetensors_name(sin_t->type)));
      }
      const std::int64_t width = l == table_layout::separate ? pairs : rot;
      std::int64_t sin_batch = 1;
      t.rows = rows_of(cos_t, cos_name, width, t.batch);
      if (rows_of(sin_t, sin_name, width, sin_batch) != t.rows || sin_batch != t.batch) {
        throw error(fmt::format("tensors '{}' {} and '{}' {} have different numbers of rows",
                                cos_name, io::shape_string(cos_t->shape), sin_name,
                                io::shape_string(sin_t->shape)));
      }
      if (l != table_layout::separate && !forced) {
        // transformers' halves or GPT-J's repeated pairs: decided by the data when only one holds,
        // by the spec's layout otherwise (then the duplicates that differ count as errors).
        const bool h = duplicates_equal(*cos_t, t.rows, pairs, true) &&
                       duplicates_equal(*sin_t, t.rows, pairs, true);
        const bool r = duplicates_equal(*cos_t, t.rows, pairs, false) &&
                       duplicates_equal(*sin_t, t.rows, pairs, false);
        if (h != r) {
          l = h ? table_layout::halves : table_layout::repeated;
          by += h ? "; the data: its halves are equal" : "; the data: its pairs repeat";
        } else {
          l = s.layout == spec::rope_layout::neox ? table_layout::halves : table_layout::repeated;
          by += fmt::format("; the spec's {} layout (the data {} duplicate pattern)",
                            spec::to_string(s.layout), h ? "shows both" : "shows neither");
        }
      }
      t.width = width;
      t.cos = {cos_t, width, 1, 0};
      t.sin = {sin_t, width, 1, 0};
      for (std::int64_t j = 0; j < width; ++j) {
        t.pair.push_back(l == table_layout::separate ? j
                         : l == table_layout::halves ? j % pairs
                                                     : j / 2);
      }
      t.source = fmt::format("tensors '{}' and '{}' {}", cos_name, sin_name,
                             io::shape_string(cos_t->shape));
      read_as = l == table_layout::separate ? fmt::format("cos and sin [P, {}]", pairs)
                : l == table_layout::halves
                    ? fmt::format("cos and sin [P, {}] with duplicated halves (transformers)", rot)
                    : fmt::format("cos and sin [P, {}] with repeated pairs (GPT-J)", rot);
      break;
    }
    case table_layout::vllm: {
      if (!cache) {
        throw error(fmt::format(
            "--layout vllm: no tensor 'cos_sin_cache' nor a lone [P, {}] tensor; the dump holds {}",
            rot, tensor_list(d)));
      }
      t.rows = rows_of(cache, cache_name, rot, t.batch);
      t.width = pairs;
      t.cos = {cache, rot, 1, 0};
      t.sin = {cache, rot, 1, pairs};
      for (std::int64_t j = 0; j < pairs; ++j) t.pair.push_back(j);
      t.source =
          fmt::format("tensor '{}' {} = [cos | sin]", cache_name, io::shape_string(cache->shape));
      read_as = fmt::format(
          "[P, {}] = [cos | sin] per row (vLLM's cos_sin_cache; ggml's NEOX order)", rot);
      break;
    }
    case table_layout::pairs: {
      if (!pairs_t) {
        throw error(fmt::format(
            "--layout pairs: no [P, pairs, 2] tensor ('table' or 'freqs_cis') nor a lone [P, {}] "
            "tensor; the dump holds {}",
            rot, tensor_list(d)));
      }
      const auto sh = drop_ones(pairs_t->shape, 3);
      const bool flattened = pairs_t == flat;
      if (flattened) {
        t.rows = rows_of(pairs_t, pairs_name, rot, t.batch);
      } else if ((sh.size() == 3 || sh.size() == 4) && sh[sh.size() - 2] == pairs &&
                 sh.back() == 2) {
        t.batch = sh.size() == 4 ? sh[0] : 1;
        t.rows = t.batch * sh[sh.size() - 3];
      } else {
        throw error(fmt::format("tensor '{}' has shape {}, expected [P, {}, 2]{}", pairs_name,
                                io::shape_string(pairs_t->shape), pairs,
                                pairs_t->complex ? fmt::format(" (complex [P, {}])", pairs) : ""));
      }
      t.width = pairs;
      t.cos = {pairs_t, 2 * pairs, 2, 0};
      t.sin = {pairs_t, 2 * pairs, 2, 1};
      for (std::int64_t j = 0; j < pairs; ++j) t.pair.push_back(j);
      if (pairs_t->complex) {
        std::vector<std::int64_t> cs(pairs_t->shape.begin(), pairs_t->shape.end() - 1);
        t.source =
            fmt::format("tensor '{}' complex {} = cos + i·sin", pairs_name, io::shape_string(cs));
        read_as = fmt::format(
            "complex [P, {}] = cos + i·sin (Meta's freqs_cis), as (real, imag) pairs", pairs);
      } else {
        t.source = fmt::format("tensor '{}' {} of (cos, sin) pairs", pairs_name,
                               io::shape_string(pairs_t->shape));
        read_as = flattened ? fmt::format(
                                  "[P, {}] = (cos, sin) pairs per row (ggml's NORMAL order and "
                                  "its cache)",
                                  rot)
                            : fmt::format("[P, {}, 2] of (cos, sin) pairs", pairs);
      }
      break;
    }
  }
  t.layout = l;
  if (t.batch > 1) {
    t.batch_identical = batches_equal(*t.cos.a, t.batch) && batches_equal(*t.sin.a, t.batch);
    read_as +=
        fmt::format("; a batch of {}: {} rows of {} per batch", t.batch, t.rows / t.batch, t.width);
  }
  std::string tensors = t.source;
  t.reading = {"table", to_string(l), tensors, read_as, by};
  return t;
}

bool table_present(const dump& d, const spec::rope& s, const options& o) {
  if (o.layout) return true;
  for (const char* n : {"cos", "cos_cached", "cos_sin_cache", "table", "freqs_cis", "cos_sin"}) {
    if (d.find(n)) return true;
  }
  for (const auto& [name, a] : d.tensors) {
    if (is_role_name(name) || !is_float(a.type)) continue;
    const auto sh3 = drop_ones(a.shape, 3), sh2 = drop_ones(a.shape, 2);
    if ((sh3.size() == 3 || sh3.size() == 4) && sh3[sh3.size() - 2] == s.pairs() &&
        sh3.back() == 2) {
      return true;
    }
    if ((sh2.size() == 2 || sh2.size() == 3) && sh2.back() == s.rotary_dim) return true;
  }
  return false;
}

void fold_identical_batches(table_source& t, std::vector<std::int64_t>& pos) {
  if (t.batch <= 1) return;
  const auto per = static_cast<std::size_t>(t.rows / t.batch);
  bool same = t.batch_identical;
  for (std::size_t r = per; same && r < pos.size(); ++r) same = pos[r] == pos[r % per];
  if (same) {
    t.rows /= t.batch;
    pos.resize(per);
    t.reading.read_as += fmt::format(", all {} the same: the first read", t.batch);
  } else {
    t.reading.read_as += ", each with its own positions";
  }
}

// ---- q/k ----------------------------------------------------------------------------------------

qk_set find_qk(const dump& d, const spec::rope& s, const options& o, bool with_table) {
  qk_set set;
  struct raw {
    std::string name;
    const io::array *in, *out;
  };
  std::vector<raw> found;
  for (const char* n : {"q", "k"}) {
    const std::string in_name = std::string(n) + "_in", out_name = std::string(n) + "_out";
    const io::array* in = d.find(in_name);
    const io::array* out = d.find(out_name);
    if (!in && !out) continue;
    if (!in || !out) {
      throw error(fmt::format("tensor '{}' needs its pair '{}' (inputs and rotated outputs)",
                              in ? in_name : out_name, in ? out_name : in_name));
    }
    if (in->shape != out->shape || in->type != out->type) {
      throw error(
          fmt::format("tensors '{}' {} {} and '{}' {} {} must have the same shape and dtype",
                      in_name, io::shape_string(in->shape), io::safetensors_name(in->type),
                      out_name, io::shape_string(out->shape), io::safetensors_name(out->type)));
    }
    (void)visit_tensor(*in, "tensor '" + in_name + "'", [](auto) { return 0; });
    if (readings_of(in->shape, s.head_dim, std::nullopt).empty()) {
      throw error(fmt::format(
          "tensors '{}' and '{}' {}: expected head_dim = {} last, as [B, H, T, D], [B, T, H, D], "
          "[T, H, D] or [T, H·D] (the last axis a multiple of head_dim)",
          in_name, out_name, io::shape_string(in->shape), s.head_dim));
    }
    found.push_back({n, in, out});
  }
  if (found.empty()) {
    if (o.qk_layout || o.qk_order) {
      throw error(
          fmt::format("{}: the dump holds no rotated q/k (q_in/q_out, k_in/k_out); it holds {}",
                      o.qk_layout ? "--qk-layout" : "--qk-order", tensor_list(d)));
    }
    return set;
  }

  // The options, else the dump's metadata (pev's own keys), decide first.
  std::optional<qk_layout> forced = o.qk_layout;
  std::string forced_by = "--qk-layout";
  if (!forced) {
    if (const auto it = d.metadata.find("qk_layout"); it != d.metadata.end()) {
      try {
        forced = parse_qk_layout(it->second);
      } catch (const error& e) {
        throw error(std::string("the dump's metadata qk_layout: ") + e.what());
      }
      forced_by = fmt::format("the dump's metadata qk_layout = {}", it->second);
    }
  }
  std::optional<qk_order> order = o.qk_order;
  std::string order_by = "--qk-order";
  if (!order) {
    if (const auto it = d.metadata.find("qk_order"); it != d.metadata.end()) {
      try {
        order = parse_qk_order(it->second);
      } catch (const error& e) {
        throw error(std::string("the dump's metadata qk_order: ") + e.what());
      }
      order_by = fmt::format("the dump's metadata qk_order = {}", it->second);
    }
  }
  // The layout tests on a tensor pair's own dtype (visit_tensor checked it above).
  auto norms = [&](const raw& r, qk_order order) {
    return visit_tensor(*r.in, r.name, [&](auto tag) {
      return pair_norms<typename decltype(tag)::type>(*r.in, *r.out, s.head_dim,
                                                      output_perm(s, order), s);
    });
  };
  // head_invariance reads every token: on the --threads arena.
  tbb::task_arena arena(arena_threads(o));
  auto invariance = [&](const raw& r, const axes& a, const std::vector<std::int64_t>& perm) {
    return arena.execute([&] {
      return visit_tensor(*r.in, r.name, [&](auto tag) {
        return head_invariance<typename decltype(tag)::type>(a, *r.in, *r.out, perm, s);
      });
    });
  };

  // The order of the outputs: it matters only where the two orders differ (an interleaved rotation
  // of two pairs or more). Rows of D values are the same in every axis reading, so it is settled
  // first, from the pair norms: the order that reads each rotated pair where it is keeps
  // |output pair| / |input pair| the same for every pair.
  const bool orders_differ =
      s.layout == spec::rope_layout::interleaved && s.pairs() >= 2 && s.rotary_dim > 2;
  std::string order_text;
  if (!orders_differ) {
    order = qk_order::input;
  } else if (!order) {
    agreement as_input, as_half;
    for (const raw& r : found) {
      as_input += norms(r, qk_order::input);
      as_half += norms(r, qk_order::half_split);
    }
    if (as_input.fits() && !as_half.fits()) {
      order = qk_order::input;
      order_by = "the data: only that order keeps every rotated pair's norm";
    } else if (as_half.fits() && !as_input.fits()) {
      order = qk_order::half_split;
      order_by = "the data: only that order keeps every rotated pair's norm";
    } else if (as_input.fits()) {
      throw error(fmt::format(
          "q/k: the outputs can be read in the inputs' interleaved order or in half-split order "
          "(DeepSeek-V3's apply_rotary_pos_emb_interleave), and both keep every pair's norm: "
          "state it with --qk-order input|half-split"));
    } else {
      order = qk_order::input;
      order_by =
          "default: neither order keeps every rotated pair's norm (not a plain rotation either "
          "way), read in the inputs' order";
    }
  }
  const std::vector<std::int64_t> perm = output_perm(s, *order),
                                  identity = output_perm(s, qk_order::input);
  if (orders_differ) {
    order_text = *order == qk_order::half_split
                     ? fmt::format(
                           "outputs in half-split order (rotated pair i at (i, i + {}), as "
                           "DeepSeek-V3's apply_rotary_pos_emb_interleave writes them)",
                           s.pairs())
                     : "outputs in the inputs' interleaved order (pair i at (2i, 2i + 1))";
  }

  // The positions: --positions (without a table), else a tensor.
  std::vector<std::int64_t> given, given_shape;
  std::string given_name;
  if (!with_table && !o.positions.empty()) {
    given = o.positions;
    given_shape = {static_cast<std::int64_t>(given.size())};
    given_name = "--positions";
  } else {
    std::string name;
    const io::array* p = with_table
                             ? find_any(d, {"qk_positions"}, &name)
                             : find_any(d, {"qk_positions", "positions", "position_ids"}, &name);
    if (p) {
      given = p->to_int64();
      given_shape = drop_ones(p->shape, 1);
      // MRoPE's [S, T] (or [S, 1, T]) positions: the layout is settled on the first stream's T
      // (certify_rope reads every stream's; docs/encodings.md §4.6).
      const std::int64_t S = s.streams();
      if (S > 1 && !given_shape.empty() && given_shape.front() == S &&
          given.size() % static_cast<std::size_t>(S) == 0 && given_shape.size() > 1) {
        given.resize(given.size() / static_cast<std::size_t>(S));
        given_shape = {static_cast<std::int64_t>(given.size())};
      }
      if (given_shape.size() > 2) {
        throw error(
            fmt::format("tensor '{}' has shape {}, expected positions [T] or [B, T] (position_ids)",
                        name, io::shape_string(p->shape)));
      }
      given_name = fmt::format("'{}' {}", name, io::shape_string(p->shape));
    }
  }
  auto positions_fit = [&](const axes& r) {
    if (given_name.empty()) return true;
    const auto n = static_cast<std::int64_t>(given.size());
    // MRoPE's --positions: S·T values, stream after stream.
    if (s.streams() > 1 && r.batch == 1 && n == s.streams() * r.tokens) return true;
    if (given_shape.size() == 2) return given_shape[0] == r.batch && given_shape[1] == r.tokens;
    return n == r.batch * r.tokens || (r.batch > 1 && n == r.tokens);
  };

  // Candidate readings: a class fits when every tensor has a reading in it, with the same batch
  // and tokens.
  std::optional<qk_class> fc;
  if (forced) fc = class_of(*forced);
  struct candidate {
    qk_class cls;
    std::vector<axes> per;  // one per tensor of `found`
  };
  std::vector<candidate> cands;
  for (qk_class c : {qk_class::bhtd, qk_class::bthd, qk_class::t_hd}) {
    if (fc && *fc != c) continue;
    candidate k{c, {}};
    for (const raw& r : found) {
      for (const axes& a : readings_of(r.in->shape, s.head_dim, fc)) {
        if (a.cls == c) k.per.push_back(a);
      }
    }
    if (k.per.size() != found.size()) continue;
    bool agree = true;
    for (const axes& a : k.per) {
      agree = agree && a.batch == k.per[0].batch && a.tokens == k.per[0].tokens;
    }
    if (agree) cands.push_back(std::move(k));
  }
  std::string shapes;
  for (const raw& r : found) {
    shapes += fmt::format("{}'{}_in' {}", shapes.empty() ? "" : ", ", r.name,
                          io::shape_string(r.in->shape));
  }
  if (cands.empty()) {
    throw error(fmt::format(
        "q/k: {} do not fit {} (expected head_dim = {} last; q and k with the same batch and "
        "tokens)",
        shapes,
        forced ? fmt::format("--qk-layout {} ({})", to_string(*forced), forced_by)
               : std::string("one layout"),
        s.head_dim));
  }
  // Readings that group the rows alike are one reading (a head or token axis of size 1).
  auto same_grouping = [](const candidate& a, const candidate& b) {
    for (std::size_t i = 0; i < a.per.size(); ++i) {
      const axes &x = a.per[i], &y = b.per[i];
      const bool tx = x.heads_first && x.heads > 1 && x.tokens > 1;
      const bool ty = y.heads_first && y.heads > 1 && y.tokens > 1;
      if (x.batch != y.batch || x.tokens != y.tokens || x.heads != y.heads || tx != ty) {
        return false;
      }
    }
    return true;
  };
  for (std::size_t i = 0; i < cands.size(); ++i) {
    for (std::size_t j = i + 1; j < cands.size();) {
      if (same_grouping(cands[i], cands[j])) {
        cands.erase(cands.begin() + static_cast<std::ptrdiff_t>(j));
      } else {
        ++j;
      }
    }
  }
  std::string by = forced ? forced_by : "the shapes";
  auto describe = [&](const candidate& c) {
    std::string v;
    for (std::size_t i = 0; i < c.per.size(); ++i) {
      v += fmt::format("{}{} {}", i ? ", " : "", found[i].name, c.per[i].text());
    }
    return fmt::format("{} ({})", class_name(c.cls), v);
  };
  if (cands.size() > 1 && !given_name.empty()) {
    std::vector<candidate> kept;
    for (const candidate& c : cands) {
      if (positions_fit(c.per[0])) kept.push_back(c);
    }
    if (kept.empty()) {
      std::string list;
      for (const candidate& c : cands) list += (list.empty() ? "" : "; ") + describe(c);
      throw error(fmt::format(
          "q/k: the {} positions of {} fit no reading of {}: {} (give the positions of every "
          "token, [T] or [B, T], or state the layout with --qk-layout)",
          given.size(), given_name, shapes, list));
    }
    if (kept.size() < cands.size()) by = fmt::format("the positions {}", given_name);
    cands = std::move(kept);
  }
  if (cands.size() > 1) {
    // The data: only the reading whose heads are heads rotates the heads of a token alike.
    std::vector<candidate> kept;
    std::string figures;
    for (const candidate& c : cands) {
      agreement g;
      for (std::size_t i = 0; i < found.size(); ++i) {
        g += invariance(found[i], c.per[i], perm);
      }
      figures += fmt::format("{}{}: {} of {} head pairs differ", figures.empty() ? "" : "; ",
                             class_name(c.cls), g.off, g.samples);
      if (g.fits()) kept.push_back(c);
    }
    if (kept.size() != 1) {
      std::string list;
      for (const candidate& c : cands) list += (list.empty() ? "" : "; ") + describe(c);
      throw error(fmt::format(
          "q/k: {} can be read as {}, and {} ({}): state the layout with --qk-layout "
          "bhtd|bthd|thd|t(hd), or give the positions of every token (position_ids [B, T])",
          shapes, list,
          kept.empty() ? "no reading rotates every head of a token alike"
                       : "the data fit several (every head of a token is rotated alike in each)",
          figures));
    }
    cands = std::move(kept);
    by = fmt::format("the data: only this reading rotates every head of a token alike ({})",
                     figures);
  }
  const candidate& c = cands.front();
  if (!given_name.empty() && !positions_fit(c.per[0])) {
    throw error(fmt::format("q/k have {} tokens ({}) but {} positions are given ({})",
                            c.per[0].batch * c.per[0].tokens, describe(c), given.size(),
                            given_name));
  }

  // The positions of every token row.
  const std::int64_t B = c.per[0].batch, T = c.per[0].tokens;
  if (given_name.empty()) {
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t t = 0; t < T; ++t) set.pos.push_back(t);
    }
  } else if (static_cast<std::int64_t>(given.size()) == B * T) {
    set.pos = given;
  } else {
    for (std::int64_t b = 0; b < B; ++b) set.pos.insert(set.pos.end(), given.begin(), given.end());
  }
  if (!set.pos.empty() && *std::min_element(set.pos.begin(), set.pos.end()) < 0) {
    throw error("negative positions cannot be certified");
  }
  if (!with_table) covers_every_position(set.pos, o.exhaustive);

  std::string tensors, read;
  for (std::size_t i = 0; i < found.size(); ++i) {
    const raw& r = found[i];
    const axes& a = c.per[i];
    qk_source q;
    q.name = r.name;
    q.in = canonical(*r.in, a, identity);
    q.out = canonical(*r.out, a, perm);
    q.tokens = B * T;
    q.heads = a.heads;
    q.dim = a.dim;
    q.source =
        fmt::format("tensors '{0}_in' and '{0}_out' {1}", r.name, io::shape_string(r.out->shape));
    tensors += fmt::format("{}'{}_in'/'{}_out' {}", i ? ", " : "", r.name, r.name,
                           io::shape_string(r.in->shape));
    read += fmt::format("{}{} {}", i ? ", " : "", r.name, a.text());
    set.qk.push_back(std::move(q));
  }
  const qk_layout layout = c.per[0].layout();
  std::string read_as = fmt::format("{} {}", to_string(layout), read);
  if (B > 1) read_as += fmt::format("; {} sequences of {} tokens", B, T);
  if (!order_text.empty()) read_as += "; " + order_text;
  set.reading = {"q/k", to_string(layout), tensors, read_as,
                 order_text.empty() ? by : by + "; the order: " + order_by};
  set.what = fmt::format("rotated {}: {} read as {} ({} layout; decided by {})",
                         set.qk.size() == 2 ? "q and k" : set.qk.front().name, tensors, read_as,
                         spec::to_string(s.layout), set.reading.decided_by);
  return set;
}

}  // namespace pev::certify::detail

namespace pev::certify {

table_read read_rope_table(const dump& d, const spec::rope& s, std::optional<table_layout> layout) {
  const detail::table_source t = detail::find_rope_table(d, s, layout);
  const std::int64_t pairs = s.pairs();
  const dtype type = t.cos.a->type;
  const std::size_t es = size_of(type);
  table_read out;
  out.layout = t.layout;
  out.detected = t.detected;
  out.source = t.source;
  for (io::array* a : {&out.cos, &out.sin}) {
    a->type = type;
    a->shape = {t.rows, pairs};
    a->data.assign(static_cast<std::size_t>(t.rows * pairs) * es, std::byte{0});
  }
  // Each pair's first column is read; a later column of the same pair must hold the same bits.
  std::vector<std::int64_t> first(static_cast<std::size_t>(pairs), -1);
  for (std::int64_t j = 0; j < t.width; ++j) {
    auto& f = first[static_cast<std::size_t>(t.pair[static_cast<std::size_t>(j)])];
    if (f < 0) f = j;
  }
  for (std::int64_t r = 0; r < t.rows; ++r) {
    for (int which = 0; which < 2; ++which) {
      const detail::plane& pl = which == 0 ? t.cos : t.sin;
      std::byte* row = (which == 0 ? out.cos : out.sin).data.mutable_data() +
                       static_cast<std::size_t>(r * pairs) * es;
      for (std::int64_t j = 0; j < t.width; ++j) {
        const std::int64_t i = t.pair[static_cast<std::size_t>(j)];
        const std::byte* v = pl.a->data.data() + pl.at(r, j) * es;
        if (first[static_cast<std::size_t>(i)] == j) {
          std::memcpy(row + static_cast<std::size_t>(i) * es, v, es);
        } else if (std::memcmp(row + static_cast<std::size_t>(i) * es, v, es) != 0) {
          throw error(fmt::format(
              "{}: the {} layout repeats each value, but row {} column {} differs from column {} "
              "({} of pair {})",
              t.source, to_string(t.layout), r, j, first[static_cast<std::size_t>(i)],
              which == 0 ? "cos" : "sin", i));
        }
      }
    }
  }
  return out;
}

}  // namespace pev::certify
