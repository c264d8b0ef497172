// Certification of learned positional tables (docs/certify.md §4, docs/encodings.md §2.4): every
// row the implementation produced against the exact row of the spec's table — the stored value (a
// lookup) or its exact linear interpolation — on the grade ladder, the hf rung being PyTorch's fp32
// interpolation (docs/numerics.md §10.3); and, when the rows are not certified, the three mistakes
// of the field replayed on them: another offset, the other corner alignment, a truncated table,
// each naming the parameter the rows imply.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <type_traits>
#include <unordered_map>

#include "detail.h"
#include "diagnosis.h"
#include "pev/core/error.h"
#include "pev/kernel/absolute.h"
#include "pev/metric/error_model.h"
#include "pev/metric/ulp.h"
#include "pev/ref/sinusoidal.h"
#include "pev/scalar/round.h"

namespace pev::certify::detail {

namespace {

constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();

/// Rows per chunk of the comparison: about 2^22 values (the correct rows of a chunk in memory).
std::size_t chunk_rows(std::int64_t d) {
  return std::max<std::size_t>(64, (std::size_t{1} << 22) / static_cast<std::size_t>(d));
}

/// Where one row's values come from, and which table rows PyTorch's fp32 source index can reach.
struct row_model {
  ref::learned_source src;
  bool lookup = true;
  double ex = 0;  // interpolated: the bound of the fp32 source index's error
  std::int64_t lo = 0, hi = 0;
};

row_model model_of(const spec::learned& s, std::int64_t p) {
  row_model m;
  m.src = ref::learned_source_of(s, p);
  m.lookup = s.target_positions == 0;
  m.lo = m.hi = m.src.i0;
  if (m.lookup) return m;
  const double x = static_cast<double>(m.src.i0) +
                   static_cast<double>(m.src.rem) / static_cast<double>(m.src.den);
  // PyTorch's fp32 source index rounds the scale, the position, their product (and the
  // half-pixel subtraction): off by ≤ 4·2^−24·(x + 1), held here with a factor 2.
  m.ex = 0x1p-21 * (x + 1);
  m.lo = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::floor(x - m.ex)));
  m.hi = std::min<std::int64_t>(s.num_positions - 1,
                                static_cast<std::int64_t>(std::ceil(x + m.ex)) + 1);
  return m;
}

/// The exact value of column c of a row, rounded to double (within an ulp of double): the stored
/// value, or (a·(den − rem) + b·rem)/den with both products exact in binary128.
double exact_value(const spec::learned& s, const ref::learned_source& src, std::size_t c) {
  const auto d = static_cast<std::size_t>(s.d_model);
  const double a = s.table[static_cast<std::size_t>(src.i0) * d + c];
  if (src.rem == 0) return a;
  const double b = s.table[static_cast<std::size_t>(src.i1) * d + c];
  __extension__ typedef __float128 f128;
  const f128 num = f128(a) * f128(src.den - src.rem) + f128(b) * f128(src.rem);
  return static_cast<double>(num / f128(src.den));
}

/// A column's magnitude (the largest table value the row reads) and the hf pipeline's error
/// before the output's rounding (docs/numerics.md §10.3): a lookup stores the value in fp32; an
/// interpolation adds the fp32 source index's error times the local slope, fl(1 − λ) (≤ 2^−25
/// off, times the magnitude), and the roundings of fl(λ0·a), fl(λ·b) and their sum.
struct column_model {
  double mag = 0, hf = 0;
};

column_model column_of(const spec::learned& s, const row_model& m, std::size_t c) {
  const auto d = static_cast<std::size_t>(s.d_model);
  column_model cm;
  double slope = 0;
  for (std::int64_t i = m.lo; i <= m.hi; ++i) {
    const double v = s.table[static_cast<std::size_t>(i) * d + c];
    cm.mag = std::max(cm.mag, std::fabs(v));
    if (i < m.hi) {
      slope = std::max(slope, std::fabs(s.table[static_cast<std::size_t>(i + 1) * d + c] - v));
    }
  }
  constexpr format f32 = format_of<float>();
  cm.hf = m.lookup
              ? metric::half_ulp(cm.mag, f32)
              : m.ex * slope + 0x1p-25 * cm.mag + 3 * metric::half_ulp(cm.mag * (1 + 0x1p-22), f32);
  return cm;
}

/// A pipeline's error e at exact magnitude y, then the output's rounding when T is narrower
/// than fp32 (the hf pipeline's values are fp32).
template <class T>
double with_output(double e, double y) {
  constexpr format out = format_of<T>();
  return out.p < format_of<float>().p ? e + metric::half_ulp(std::fabs(y) + e, out) : e;
}

/// The correctly rounded rows of `pos`: the accurate kernel (correctly rounded, docs/numerics.md
/// §10.3); fp64 rows: the stored value, or the MPFR reference's interpolation rounded once.
template <class T>
void correct_rows(const spec::learned& s, std::span<const std::int64_t> pos, std::span<T> out) {
  if constexpr (std::is_same_v<T, double>) {
    const auto d = static_cast<std::size_t>(s.d_model);
    for (std::size_t r = 0; r < pos.size(); ++r) {
      const ref::learned_source src = ref::learned_source_of(s, pos[r]);
      if (src.rem == 0) {
        std::copy_n(s.table.begin() + static_cast<std::ptrdiff_t>(src.i0) * s.d_model, d,
                    out.begin() + static_cast<std::ptrdiff_t>(r * d));
        continue;
      }
      const std::vector<real> row = ref::learned_row(s, pos[r]);
      for (std::size_t c = 0; c < d; ++c) out[r * d + c] = round_to<double>(row[c]);
    }
  } else {
    kernel::learned_table<T>(s, kernel::strategy::accurate, pos, out);
  }
}

template <class T>
std::uint64_t bits_of(T v) {
  return static_cast<std::uint64_t>(scalar_traits<T>::to_bits(v));
}

/// The check of the rows; `first_fail` receives the smallest table row (position + offset) of a
/// row beyond the held bound, the length a truncated table would have.
template <class T>
void rows_as(const spec::learned& s, context& k, const io::array& a,
             const std::vector<std::int64_t>& pos, const std::string& source,
             std::int64_t& first_fail) {
  constexpr format out = format_of<T>();
  const auto d = static_cast<std::size_t>(s.d_model);
  double table_max = 0;
  for (double v : s.table) table_max = std::max(table_max, std::fabs(v));
  const double scale_ulp = metric::ulp_at(table_max, out);
  // A value's bounds by name, of its exact value y, its magnitude and the hf pipeline's error:
  // one ulp, drift-free (2 ulps of the magnitude: nothing grows with the position), hf, and hf
  // with the table stored in 16 bits (each value read off by ½ ulp of the storage).
  const auto stored = [](format st) {
    return [st](double y, double mag, double hf) {
      return with_output<T>(hf + metric::half_ulp(mag, st), y);
    };
  };
  const auto bounds = ladder_bounds<double, double, double>(
      false, true,
      {{"exact",
        [](double y, double, double) { return metric::ulp_at(std::fabs(y), format_of<T>()); }},
       {"drift-free",
        [](double, double mag, double) { return 2 * metric::ulp_at(mag, format_of<T>()); }},
       {"hf", [](double y, double, double hf) { return with_output<T>(hf, y); }},
       {"vllm-fp16", stored(format_of<half>())},
       {"vllm-bf16", stored(format_of<bfloat16>())}},
      "learned");
  const compare::figures::options fo = figure_options(
      k.o, layout_end(*std::max_element(pos.begin(), pos.end())), s.d_model, false, &k.mismatches);
  const std::size_t gate = fo.gate;
  compare::figures f(fo);
  std::vector<double> b(bounds.size());
  std::vector<T> rn;
  const auto [first_row, end_row] = shard_rows(pos.size(), k.o);  // --shard: this shard's rows
  const std::size_t chunk = chunk_rows(s.d_model);
  for (std::size_t r0 = first_row; r0 < end_row; r0 += chunk) {
    const std::size_t n = std::min(chunk, end_row - r0);
    const std::span<const std::int64_t> cp(pos.data() + r0, n);
    rn.resize(n * d);
    correct_rows<T>(s, cp, std::span<T>(rn));
    for (std::size_t rr = 0; rr < n; ++rr) {
      const std::int64_t p = cp[rr];
      f.add_position(p);
      const row_model m = model_of(s, p);
      bool fails = false;
      for (std::size_t col = 0; col < d; ++col) {
        const T got = element<T>(a, (r0 + rr) * d + col);
        const double y = exact_value(s, m.src, col);
        const column_model cm = column_of(s, m, col);
        bounds.fill(b, y, cm.mag, cm.hf);
        f.add(compare::value_of<T>(p, static_cast<std::int64_t>(col), got, rn[rr * d + col], y,
                                   table_max, scale_ulp),
              "pe", b);
        fails = fails || rho_against(scalar_traits<T>::to_double(got), y, b[gate]) > 1;
      }
      if (fails) first_fail = std::min(first_fail, *spec::learned_index(s, p));
    }
  }
  check c = make_check("pe", source, dtype_of<T>(), f, k.o);
  record_rows(c, first_row, end_row, pos.size(), d, arena_threads(k.o),
              [&a, d](std::size_t r, std::span<std::uint64_t> bits) {
                for (std::size_t col = 0; col < d; ++col) {
                  bits[col] = bits_of(element<T>(a, r * d + col));
                }
              });
  k.cert.checks.push_back(std::move(c));
}

/// The field's mistakes replayed on a sample of the rows (diagnosis.h: replay_rows), each judged
/// with the hf bound of the pipeline it runs; findings name the parameter the rows imply.
template <class T>
void diagnose_as(const spec::learned& s, context& k, const io::array& a,
                 const std::vector<std::int64_t>& all_pos, std::int64_t first_fail,
                 evidence_map& ev, std::map<std::string, std::string>& finding) {
  const auto d = static_cast<std::size_t>(s.d_model);
  const std::vector<std::size_t> rsel = replay_rows(all_pos, 1, k.mismatches);
  const std::vector<std::int64_t> pos = positions_of(all_pos, 1, rsel);
  record_replayed(k, {replayed_text(rsel.size(), all_pos.size(), "rows")});
  const std::size_t n = pos.size();
  std::vector<double> g(n * d);
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = 0; c < d; ++c) g[r * d + c] = element_value<T>(a, rsel[r] * d + c);
  }
  std::vector<T> correct(n * d), mv(n * d);
  correct_rows<T>(s, pos, std::span<T>(correct));
  // Replays mistaken spec `ms` reading positions `mp` (rows from table row `zero_from` of the
  // spec's on are zero), as mistake `id`; the closest replay of an id is kept.
  const auto replay = [&](const std::string& id, const std::string& description,
                          const std::string& implies, const spec::learned& ms,
                          const std::vector<std::int64_t>& mp, std::int64_t zero_from) {
    for (std::int64_t p : mp) {
      if (!spec::learned_index(ms, p)) return;  // a row the mistaken pipeline cannot read
    }
    correct_rows<T>(ms, mp, std::span<T>(mv));
    evidence x;
    x.description = description;
    bool changes = false;
    for (std::size_t r = 0; r < n; ++r) {
      const bool zero = *spec::learned_index(s, pos[r]) >= zero_from;
      const row_model m = model_of(ms, mp[r]);
      for (std::size_t c = 0; c < d; ++c) {
        const T v = zero ? T(0) : mv[r * d + c];
        changes = changes || bits_of(v) != bits_of(correct[r * d + c]);
        x.digest = (x.digest ^ bits_of(v)) * 0x100000001b3ull;  // FNV-1a over 64-bit words
        const double vd = scalar_traits<T>::to_double(v);
        const double bound = zero
                                 ? 0.0
                                 : with_output<T>(column_of(ms, m, c).hf,
                                                  std::max(std::fabs(g[r * d + c]), std::fabs(vd)));
        x.add(rho_against(g[r * d + c], vd, bound));
      }
    }
    if (!changes || x.count == 0) return;
    const auto it = ev.find(id);
    if (it == ev.end() || x.max_rho < it->second.max_rho) {
      ev[id] = x;
      finding[id] = implies;
    }
  };

  // (a) Another offset: the usual ones (OPT's 2 forgotten or applied where there is none), and
  // for a lookup the offset of the table row each mismatching row equals.
  std::set<std::int64_t> offsets;
  for (std::int64_t o : {std::int64_t{0}, std::int64_t{1}, std::int64_t{2}, s.offset - 2,
                         s.offset - 1, s.offset + 1, s.offset + 2}) {
    if (o >= 0 && o != s.offset && o < spec::learned_rows(s)) offsets.insert(o);
  }
  // (At most 2^26 table values are rounded for that: beyond, the usual offsets only.)
  if (s.target_positions == 0 && s.table.size() <= (std::size_t{1} << 26)) {
    spec::learned plain = s;
    plain.offset = 0;
    std::vector<std::int64_t> every(static_cast<std::size_t>(s.num_positions));
    for (std::size_t i = 0; i < every.size(); ++i) every[i] = static_cast<std::int64_t>(i);
    std::vector<T> rows(every.size() * d);
    correct_rows<T>(plain, every, std::span<T>(rows));
    const auto row_hash = [d](auto&& value) {
      std::uint64_t h = 0xcbf29ce484222325ull;
      for (std::size_t c = 0; c < d; ++c) h = (h ^ value(c)) * 0x100000001b3ull;
      return h;
    };
    std::unordered_multimap<std::uint64_t, std::int64_t> by_hash;
    for (std::size_t i = 0; i < every.size(); ++i) {
      by_hash.emplace(row_hash([&](std::size_t c) { return bits_of(rows[i * d + c]); }),
                      static_cast<std::int64_t>(i));
    }
    std::size_t looked = 0;
    for (std::size_t r = 0; r < n && looked < 64; ++r) {
      const std::uint64_t h =
          row_hash([&](std::size_t c) { return bits_of(element<T>(a, rsel[r] * d + c)); });
      if (h == row_hash([&](std::size_t c) { return bits_of(correct[r * d + c]); })) continue;
      ++looked;
      const auto [lo, hi] = by_hash.equal_range(h);
      for (auto it = lo; it != hi; ++it) {
        const std::int64_t o = it->second - pos[r];
        if (o >= 0 && o != s.offset && o < spec::learned_rows(s)) offsets.insert(o);
      }
    }
  }
  for (std::int64_t o : offsets) {
    spec::learned ms = s;
    ms.offset = o;
    const std::string what =
        o == 0 ? fmt::format("the offset {} forgotten: position p read row p", s.offset)
        : s.offset == 0
            ? fmt::format(
                  "an offset of {} applied where the spec has none (as OPT's "
                  "embed_positions adds 2): position p read row p + {}",
                  o, o)
            : fmt::format("position p read row p + {} (the spec's offset is {})", o, s.offset);
    replay("learned-offset", what,
           fmt::format("offset: the rows imply {}, the spec says {}", o, s.offset), ms, pos, kNone);
  }
  // (b) The other corner alignment of the interpolation.
  if (s.target_positions > 0) {
    spec::learned ms = s;
    ms.align_corners = !s.align_corners;
    replay("learned-align-corners",
           fmt::format("interpolated to {} rows with align_corners={} (the spec says {})",
                       s.target_positions, ms.align_corners, s.align_corners),
           fmt::format("align_corners: the rows imply {}, the spec says {}", ms.align_corners,
                       s.align_corners),
           ms, pos, kNone);
  }
  // (c) A truncated table: the rows agree up to table row first_fail − 1, and past it repeat
  // that row (clamped) or are zero.
  if (first_fail != kNone && first_fail >= 1) {
    const std::int64_t len = first_fail;
    std::vector<std::int64_t> clamped(n);
    for (std::size_t r = 0; r < n; ++r) {
      clamped[r] = std::min(*spec::learned_index(s, pos[r]), len - 1) - s.offset;
    }
    const std::string implied =
        fmt::format("table length: the rows imply {} rows, the spec's table has {}", len,
                    spec::learned_rows(s));
    replay("learned-truncated-clamped",
           fmt::format("a table truncated to {} rows: the rows past it repeat row {} (clamped)",
                       len, len - 1),
           implied + " (the last repeated past it)", s, clamped, kNone);
    replay("learned-truncated-zero",
           fmt::format("a table truncated to {} rows: the rows past it are zero", len),
           implied + " (zero past it)", s, pos, len);
  }
}

}  // namespace

void learned_rows_check(const spec::learned& s, context& k, const io::array& rows,
                        std::span<const std::int64_t> positions, const std::string& name,
                        const std::string& source) {
  const auto L = s.num_positions, dm = s.d_model;
  if (static_cast<std::int64_t>(s.table.size()) != L * dm) {
    throw error(
        fmt::format("learned: the spec's table holds {} values, expected {}·{} (is "
                    "table=FILE loaded?)",
                    s.table.size(), L, dm));
  }
  const auto sh = squeezed(rows.shape);
  std::int64_t count = 1;
  for (std::size_t i = 0; i + 1 < sh.size(); ++i) count *= sh[i];
  if (sh.size() < 2 || sh.size() > 3 || sh.back() != dm) {
    throw error(fmt::format("tensor '{}' has shape {}, expected [P, {}] or [B, T, {}] (d_model)",
                            name, io::shape_string(rows.shape), dm, dm));
  }
  if (count != static_cast<std::int64_t>(positions.size())) {
    throw error(fmt::format("tensor '{}' has {} rows, but {} positions are given", name, count,
                            positions.size()));
  }
  if (positions.empty()) throw error(fmt::format("tensor '{}' has no rows", name));
  for (std::size_t r = 0; r < positions.size(); ++r) {
    const std::int64_t p = positions[r];
    if (p < 0 || !spec::learned_index(s, p)) {
      throw error(fmt::format(
          "position {} (row {} of tensor '{}') is outside the spec's table: positions 0 … {}{}", p,
          r, name, spec::learned_rows(s) - 1 - s.offset,
          s.offset != 0 ? fmt::format(" (rows {} … {} with offset {})", s.offset,
                                      spec::learned_rows(s) - 1, s.offset)
                        : std::string()));
    }
  }
  const std::vector<std::int64_t> pos(positions.begin(), positions.end());
  k.c().what = s.target_positions > 0
                   ? fmt::format("learned pe (interpolated {} → {} rows)", L, s.target_positions)
                   : std::string("learned pe");
  record_positions(k.c(), pos);
  std::int64_t first_fail = kNone;
  visit_tensor(rows, fmt::format("tensor '{}'", name), [&](auto tag) {
    rows_as<typename decltype(tag)::type>(s, k, rows, pos, source, first_fail);
  });
  grade_and_claim(k.cert);
  if (!k.o.diagnose || k.cert.exit_code() != 1) return;
  evidence_map ev;
  std::map<std::string, std::string> finding;
  visit_float(rows.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    diagnose_as<T>(s, k, rows, pos, first_fail, ev, finding);
  });
  add_explanations(ev, k.cert);
  for (const auto& [id, x] : ev) {
    if (x.max_rho <= kExplainRho) k.c().why->findings.push_back(finding[id]);
  }
}

void certify_learned(const spec::learned& s, context& k) {
  const dump& d = k.d;
  std::string name;
  const io::array* a =
      find_any(d, {"embed.positions", "positions_embedding", "pe", "table"}, &name);
  if (!a) {
    // A lone tensor beside the positions.
    const io::array* lone = nullptr;
    std::size_t others = 0;
    for (const auto& [n, t] : d.tensors) {
      if (n == "positions" || n == "position_ids" || n == "attention_mask") continue;
      ++others;
      lone = &t;
      name = n;
    }
    if (others == 1) a = lone;
  }
  if (!a) {
    throw error(
        fmt::format("no learned positional rows in the dump (expected a tensor 'pe' [P, {}] or "
                    "'embed.positions' [B, T, {}]); it holds {}",
                    s.d_model, s.d_model, tensor_list(d)));
  }
  const auto sh = squeezed(a->shape);
  if (sh.size() < 2 || sh.size() > 3 || sh.back() != s.d_model) {
    throw error(fmt::format("tensor '{}' has shape {}, expected [P, {}] or [B, T, {}] (d_model)",
                            name, io::shape_string(a->shape), s.d_model, s.d_model));
  }
  const std::int64_t batch = sh.size() == 3 ? sh[0] : 1;
  const std::vector<std::int64_t> pos =
      row_positions(d, k.o, batch * sh[sh.size() - 2], {"positions", "position_ids"}, batch);
  learned_rows_check(s, k, *a, pos, name,
                     fmt::format("tensor '{}' {}", name, io::shape_string(a->shape)));
}

certificate learned_check(const spec::encoding& e, const io::array& rows,
                          std::span<const std::int64_t> positions, const options& o) {
  const auto* s = std::get_if<spec::learned>(&e);
  if (!s) throw error(fmt::format("learned_check: a {} encoding", spec::family_name(e)));
  static const dump none;
  return certify_frame(e, none, o, [&](context& k) {
    learned_rows_check(*s, k, rows, positions, "pe",
                       fmt::format("rows {}", io::shape_string(rows.shape)));
  });
}

}  // namespace pev::certify::detail
