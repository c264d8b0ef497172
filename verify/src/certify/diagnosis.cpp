// The diagnosis (diagnosis.h): known mistakes replayed on the dump's inputs and compared with
// the data in units of the hf recipe's bound, then the certificate settled.

#include "diagnosis.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "pev/core/interrupt.h"
#include "pev/impl/mutants.h"
#include "pev/kernel/apply.h"
#include "pev/metric/error_model.h"
#include "pev/metric/libm.h"
#include "pev/ref/rope.h"

namespace pev::certify::detail {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// The diagnosis replays at most this many rows (table rows, q/k tokens, PE rows) of a dump, so
/// that its memory and time do not grow with the dump (docs/certify.md §3): of them at most
/// kLargestRows of the largest positions and the rows of the first mismatches.
constexpr std::size_t kReplayRows = 4096;
constexpr std::size_t kLargestRows = 256;

}  // namespace

std::vector<std::size_t> replay_rows(const std::vector<std::int64_t>& pos, std::size_t streams,
                                     const std::vector<report::mismatch>& first) {
  const std::size_t rows = pos.size() / streams;
  std::vector<std::size_t> out;
  if (rows <= kReplayRows) {
    out.resize(rows);
    for (std::size_t r = 0; r < rows; ++r) out[r] = r;
    return out;
  }
  auto position = [&](std::size_t r) {
    std::int64_t p = pos[r];
    for (std::size_t st = 1; st < streams; ++st) p = std::max(p, pos[st * rows + r]);
    return p;
  };
  std::vector<std::int64_t> wanted;  // the first mismatches' positions (stream 0's for MRoPE)
  for (const report::mismatch& m : first) wanted.push_back(m.position);
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  std::vector<bool> found(wanted.size());
  // The largest positions: a min-heap of (position, row), ties to the later row.
  using entry = std::pair<std::int64_t, std::size_t>;
  std::vector<entry> top;
  const auto later = std::greater<entry>();
  for (std::size_t r = 0; r < rows; ++r) {
    const auto w = std::lower_bound(wanted.begin(), wanted.end(), pos[r]);
    if (w != wanted.end() && *w == pos[r] && !found[static_cast<std::size_t>(w - wanted.begin())]) {
      found[static_cast<std::size_t>(w - wanted.begin())] = true;
      out.push_back(r);
    }
    const entry e{position(r), r};
    if (top.size() < kLargestRows) {
      top.push_back(e);
      std::push_heap(top.begin(), top.end(), later);
    } else if (later(e, top.front())) {
      std::pop_heap(top.begin(), top.end(), later);
      top.back() = e;
      std::push_heap(top.begin(), top.end(), later);
    }
  }
  for (const entry& e : top) out.push_back(e.second);
  const std::size_t even = kReplayRows - std::min(out.size(), kReplayRows);
  for (std::size_t i = 0; i < even; ++i)
    out.push_back(i * (rows - 1) / std::max<std::size_t>(even - 1, 1));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// The positions of `rows` of `pos` (`streams` lists, MRoPE): `streams` lists of rows.size().
std::vector<std::int64_t> positions_of(const std::vector<std::int64_t>& pos, std::size_t streams,
                                       const std::vector<std::size_t>& rows) {
  const std::size_t n = pos.size() / streams;
  std::vector<std::int64_t> out(streams * rows.size());
  for (std::size_t st = 0; st < streams; ++st) {
    for (std::size_t r = 0; r < rows.size(); ++r) out[st * rows.size() + r] = pos[st * n + rows[r]];
  }
  return out;
}

/// "N of R what" when the diagnosis replays a sample, else empty.
std::string replayed_text(std::size_t n, std::size_t rows, const char* what) {
  if (n == rows) return {};
  return fmt::format(
      "{} of {} {} (those of the first mismatches, of the {} largest positions, "
      "and evenly spaced)",
      n, rows, what, kLargestRows);
}

/// Records in the certificate's diagnosis which rows were replayed (empty: every row).
void record_replayed(context& k, const std::vector<std::string>& parts) {
  std::vector<std::string> said;
  for (const std::string& p : parts) {
    if (!p.empty()) said.push_back(p);
  }
  report::certification& z = k.c();
  if (!z.why) z.why.emplace();
  z.why->replayed_on = fmt::format("{}", fmt::join(said, "; "));
}

namespace {

/// Calls f(mutant, evidence) for every mistake of `family` that applies to `e` and can produce
/// `what` in dtype `t`.
template <class F>
void for_each_mistake(const spec::encoding& e, const char* family, impl::output what, dtype t,
                      evidence_map& ev, F&& f) {
  for (const impl::mutant_info& info : impl::mutant_catalogue()) {
    if (std::string_view(info.family) != family || !info.applies(e)) continue;
    interruption_point();  // between replays (pev/core/interrupt.h)
    const auto m = impl::make_mutant(info.id, e);
    if (!m->supports(what, t)) continue;
    evidence& x = ev[info.id];
    x.description = info.description;
    f(*m, x);
  }
}

/// The bits of a value, for digests of a mistake's outputs.
template <class T>
std::uint64_t bits_of(T v) {
  return static_cast<std::uint64_t>(scalar_traits<T>::to_bits(v));
}
void mix(std::uint64_t& digest, std::uint64_t v) {
  digest = (digest ^ v) * 0x100000001b3ull;  // FNV-1a over 64-bit words
}

/// A mistake's evidence on one pipeline, before it is compared with the others.
struct replay {
  evidence ev;
  bool changes = false;  // some value differs from the correct pipeline's
};

/// The rows of a dump the RoPE mistakes are replayed on (replay_rows: table rows and q/k
/// tokens), their positions, and an implementation's outputs there. MRoPE (docs/encodings.md
/// §4.6): positions are [S, rows]; an implementation's tables and rotations compose its 1-D ones
/// by its own pair → stream map, and the angle errors of pair i are those at its stream's
/// position.
template <class T>
struct rope_sample {
  const spec::rope& s;
  std::optional<std::int64_t> seq;
  bool multi = false;
  std::size_t S = 1, P = 0;
  /// Row r of the sample is row rsel[r] (token tsel[r]) of the dump; `pos` and `qk_pos` theirs.
  std::vector<std::size_t> rsel = {}, tsel = {};
  std::vector<std::int64_t> pos = {}, qk_pos = {};
  std::size_t rows = 0, tokens = 0;

  void table_of(const impl::implementation& m, std::span<T> c, std::span<T> sn) const {
    if (multi) {
      m.rope_table_streams<T>(pos, seq, c, sn);
    } else {
      m.rope_table(pos, seq, c, sn);
    }
  }
  void rotate_of(const impl::implementation& m, kernel::heads_view<const T> in,
                 kernel::heads_view<T> o) const {
    if (multi) {
      m.rope_rotate_streams<T>(qk_pos, seq, in, o);
    } else {
      m.rope_rotate(qk_pos, seq, in, o);
    }
  }
  /// Angle errors of row r of `p` (rows n) under `judge`, pair i at its stream's position
  /// (`map`).
  void errors_at(const impl::rope_contract& judge, const std::vector<std::int64_t>& p,
                 std::size_t n, std::size_t r, const std::vector<std::int64_t>& map,
                 std::vector<double>& row_out) const {
    if (!multi) return judge.angle_errors(p[r], row_out);
    std::vector<double> tmp;
    for (std::size_t st = 0; st < S; ++st) {
      judge.angle_errors(p[st * n + r], tmp);
      row_out.resize(tmp.size());
      for (std::size_t i = 0; i < tmp.size(); ++i) {
        // Pairs beyond the spec's (a mistaken layout's extra pairs) take stream 0.
        const std::size_t own = i < map.size() ? static_cast<std::size_t>(map[i]) : 0;
        if (own == st) row_out[i] = tmp[i];
      }
    }
  }
  /// The angle errors of every table row under `judge` ([rows, P]; the table holds the spec's P
  /// pairs: a plan that rotates more pairs, a pass-through tail rotated, has no column for the
  /// extra ones).
  std::vector<double> table_errors(const impl::rope_contract& judge,
                                   const std::vector<std::int64_t>& map) const {
    std::vector<double> out(rows * P), row;
    for (std::size_t r = 0; r < rows; ++r) {
      errors_at(judge, pos, rows, r, map, row);
      std::copy_n(row.begin(), std::min(row.size(), P),
                  out.begin() + static_cast<std::ptrdiff_t>(r * P));
    }
    return out;
  }
};

/// The sample of the dump the mistakes are replayed on, recorded in the certificate.
template <class T>
rope_sample<T> sample_rope(context& k, const spec::rope& s, std::optional<std::int64_t> seq,
                           const table_source* t, const std::vector<std::int64_t>& all_pos,
                           const std::vector<qk_source>& qk,
                           const std::vector<std::int64_t>& all_qk_pos) {
  rope_sample<T> x{s, seq};
  x.P = static_cast<std::size_t>(s.pairs());
  x.multi = s.streams() > 1;
  x.S = static_cast<std::size_t>(s.streams());
  x.rsel = t ? replay_rows(all_pos, x.S, k.mismatches) : std::vector<std::size_t>{};
  x.tsel = qk.empty() ? std::vector<std::size_t>{} : replay_rows(all_qk_pos, x.S, k.mismatches);
  x.pos = positions_of(all_pos, x.S, x.rsel);
  x.qk_pos = positions_of(all_qk_pos, x.S, x.tsel);
  record_replayed(k, {replayed_text(x.rsel.size(), all_pos.size() / x.S, "table rows"),
                      replayed_text(x.tsel.size(), all_qk_pos.size() / x.S, "q/k tokens")});
  x.rows = x.rsel.size();
  x.tokens = x.tsel.size();
  return x;
}

/// What does not depend on the mistake, per pipeline: its angle errors per table row (ggml
/// replays its recurrence once per position), its correct table, and each q/k's sampled inputs
/// with their correct rotation.
template <class T>
struct base_outputs {
  std::vector<double> dtheta;
  std::vector<T> cc, cs;
  struct qk_data {
    std::vector<T> in, correct;
  };
  std::vector<qk_data> qd;
};

template <class T>
base_outputs<T> correct_outputs(const rope_sample<T>& x, const impl::implementation& control,
                                const impl::rope_contract& contract, const table_source* t,
                                const std::vector<qk_source>& qk) {
  base_outputs<T> b;
  b.dtheta.resize(x.rows * x.P);
  b.cc.resize(x.rows * x.P);
  b.cs.resize(b.cc.size());
  if (t) {
    b.dtheta = x.table_errors(contract, spec::mrope_streams(x.s));
    x.table_of(control, std::span<T>(b.cc), std::span<T>(b.cs));
  }
  const auto nt = static_cast<std::int64_t>(x.tokens);
  for (const qk_source& q : qk) {
    const auto hd = static_cast<std::size_t>(q.heads * q.dim);
    typename base_outputs<T>::qk_data d{std::vector<T>(x.tokens * hd),
                                        std::vector<T>(x.tokens * hd)};
    for (std::size_t r = 0; r < x.tokens; ++r) {
      for (std::size_t u = 0; u < hd; ++u) d.in[r * hd + u] = element<T>(*q.in, x.tsel[r] * hd + u);
    }
    x.rotate_of(control, kernel::heads_view<const T>{d.in, nt, q.heads, q.dim},
                kernel::heads_view<T>{d.correct, nt, q.heads, q.dim});
    b.qd.push_back(std::move(d));
  }
  return b;
}

/// The contract a mistake that changes the spec (a plan, a sequence length) is judged with: the
/// recipe's for the mistaken spec, on the pipeline it runs; none where it keeps the spec. Its
/// sequence length into `own_seq`.
std::optional<impl::rope_contract> mistake_contract(const context& k, const spec::rope& s,
                                                    std::optional<std::int64_t> seq,
                                                    const impl::mutant_info& info,
                                                    const impl::mutant_options& mo,
                                                    const replay_base& base,
                                                    std::optional<std::int64_t>& own_seq) {
  own_seq = seq;
  if (info.hooks.sequence_length) own_seq = info.hooks.sequence_length(s, seq);
  if (!info.hooks.plan && !info.hooks.sequence_length) return std::nullopt;
  const spec::encoding planned = impl::planned_spec(info, k.e, mo);
  const auto& ps = std::get<spec::rope>(planned);
  const std::optional<std::int64_t> pseq = ps.stateful() ? own_seq : std::nullopt;
  const double pm =
      ref::rope_reference(ps, ref::exact_recipe(), pseq).attention_factor().convert_to<double>();
  return impl::rope_contract(ps, base.st, pseq, pm, base.contract->lib(),
                             base.contract->arithmetic());
}

/// The mistake's table against the dump's, judged with `judge` at the angle errors `dth`; a
/// mistake in the library (fast-math trig) also within `library_gap` (the data's hardware and
/// pev's model of it share the reduction and differ by the approximation after it).
template <class T>
void replay_table(const rope_sample<T>& x, const base_outputs<T>& b, const impl::implementation& m,
                  const table_source& t, const impl::rope_contract& judge,
                  const std::vector<double>& dth, double library_gap, replay& rp) {
  constexpr format out = format_of<T>();
  std::vector<T> mc(b.cc.size()), ms(b.cc.size());
  x.table_of(m, std::span<T>(mc), std::span<T>(ms));
  for (std::size_t r = 0; r < x.rows; ++r) {
    for (std::int64_t j = 0; j < t.width; ++j) {
      const auto i = static_cast<std::size_t>(t.pair[static_cast<std::size_t>(j)]);
      const std::size_t e = r * x.P + i;
      for (int which = 0; which < 2; ++which) {
        const plane& pl = which == 0 ? t.cos : t.sin;
        const T mt = which == 0 ? mc[e] : ms[e];
        const T ct = which == 0 ? b.cc[e] : b.cs[e];
        rp.changes = rp.changes || bits_of(mt) != bits_of(ct);
        mix(rp.ev.digest, bits_of(mt));
        const double g = scalar_traits<T>::to_double(
            element<T>(*pl.a, pl.at(static_cast<std::int64_t>(x.rsel[r]), j)));
        const double mv = scalar_traits<T>::to_double(mt);
        // The recipe's bound at the larger magnitude of the two values compared (the bound
        // depends on the exact value only through its magnitude).
        const double bd =
            judge.table_bound_at(dth[e], std::max(std::fabs(g), std::fabs(mv)), out) + library_gap;
        rp.ev.add(rho_against(g, mv, bd));
      }
    }
  }
}

/// The mistake's rotation of each sampled q/k against the dump's outputs, judged with the bound
/// of the pairs of the layout it rotates (`rs`, the mistaken spec: pass-through dims rotated are
/// judged by the contract of the pairs rotated), at its stream map `map`.
template <class T>
void replay_qk(const rope_sample<T>& x, const base_outputs<T>& b, const impl::implementation& m,
               const std::vector<qk_source>& qk, const spec::rope& rs,
               const impl::rope_contract& rjudge, const std::vector<std::int64_t>& map,
               replay& rp) {
  constexpr format out = format_of<T>();
  const std::vector<std::int64_t> pair = spec::dim_pairs(rs);
  const auto nt = static_cast<std::int64_t>(x.tokens);
  std::vector<double> row;
  for (std::size_t qi = 0; qi < qk.size(); ++qi) {
    const qk_source& q = qk[qi];
    const auto& d = b.qd[qi];
    std::vector<T> got(d.in.size());
    x.rotate_of(m, kernel::heads_view<const T>{d.in, nt, q.heads, q.dim},
                kernel::heads_view<T>{got, nt, q.heads, q.dim});
    std::vector<double> v(static_cast<std::size_t>(q.dim));
    for (std::int64_t tok = 0; tok < nt; ++tok) {
      // The dump's element of (tok, h, j) is at `dump_at` + (h·dim + j).
      const auto dump_at = static_cast<std::size_t>(x.tsel[static_cast<std::size_t>(tok)]) *
                           static_cast<std::size_t>(q.heads * q.dim);
      x.errors_at(rjudge, x.qk_pos, x.tokens, static_cast<std::size_t>(tok), map, row);
      for (std::int64_t h = 0; h < q.heads; ++h) {
        const auto b0 = static_cast<std::size_t>((tok * q.heads + h) * q.dim);
        for (std::size_t j = 0; j < v.size(); ++j) v[j] = scalar_traits<T>::to_double(d.in[b0 + j]);
        for (std::size_t j = 0; j < v.size(); ++j) {
          rp.changes = rp.changes || bits_of(got[b0 + j]) != bits_of(d.correct[b0 + j]);
          mix(rp.ev.digest, bits_of(got[b0 + j]));
          const std::int64_t i = std::max<std::int64_t>(pair[j], 0);
          const auto [a, c] = spec::pair_dims(rs, i);
          const double x0 = pair[j] >= 0 ? v[static_cast<std::size_t>(a)] : 0;
          const double x1 = pair[j] >= 0 ? v[static_cast<std::size_t>(c)] : 0;
          const double g =
              element_value<T>(*q.out, dump_at + static_cast<std::size_t>(h * q.dim) + j);
          const double mv = scalar_traits<T>::to_double(got[b0 + j]);
          // Pairs the judging pipeline does not rotate pass through: no angle error.
          const auto ui = static_cast<std::size_t>(i);
          const double bd = rjudge.rotation_bound_at(ui < row.size() ? row[ui] : 0.0, x0, x1,
                                                     std::max(std::fabs(g), std::fabs(mv)), out);
          rp.ev.add(rho_against(g, mv, bd));
        }
      }
    }
  }
}

/// Keeps a mistake's replay on a base: a mistake that leaves the dumped quantities as the correct
/// pipeline makes them cannot explain anything (e.g. a rotation mistake on a table); the first
/// base (the recipe under test, hf before ggml) keeps a mistake it explains, otherwise the base
/// that comes closest.
void keep_replay(const std::string& id, const replay& rp, evidence_map& ev) {
  if (!rp.changes || rp.ev.count == 0) return;
  const auto it = ev.find(id);
  if (it == ev.end() || (it->second.max_rho > kExplainRho && rp.ev.max_rho < it->second.max_rho)) {
    ev[id] = rp.ev;
  }
}

/// One mistake replayed on one base: its table and q/k against the dump's.
template <class T>
replay replay_mistake(const context& k, const rope_sample<T>& x, const base_outputs<T>& b,
                      const impl::mutant_info& info, const impl::mutant_options& mo,
                      const replay_base& base, const table_source* t,
                      const std::vector<qk_source>& qk) {
  constexpr format out = format_of<T>();
  const spec::rope& s = x.s;
  const auto m = impl::make_mutant(info.id, k.e, mo);
  std::optional<std::int64_t> own_seq;
  const std::optional<impl::rope_contract> own =
      mistake_contract(k, s, x.seq, info, mo, base, own_seq);
  const impl::rope_contract& judge = own ? *own : *base.contract;
  const std::vector<std::int64_t> correct_map = spec::mrope_streams(s);
  const std::vector<std::int64_t> map = x.multi ? m->stream_map() : correct_map;
  const bool own_map = x.multi && map != correct_map;
  replay rp;
  rp.ev.description = info.description;
  if (base.st != kernel::strategy::hf) rp.ev.description += " (on the ggml pipeline)";
  if (info.hooks.implied_theta && mo.rope_theta) {
    rp.ev.description += fmt::format(
        " (replayed with rope_theta {:g}, the data's; the spec's "
        "is {:g})",
        *mo.rope_theta, s.rope_theta);
  }
  if (t && m->supports(impl::output::rope_table, dtype_of<T>())) {
    const std::vector<double> own_dtheta =
        own || own_map ? x.table_errors(judge, map) : std::vector<double>{};
    // A mistake in the library (fast-math trig): at most kFastMathAbs times the magnitude
    // (pev/kernel/fast_math.h) — which the recipe's bound, relative to the value, does not hold
    // for small values.
    const double library_gap =
        info.hooks.trig ? metric::kFastMathAbs * std::fabs(judge.table_form_for(out).m) : 0;
    replay_table(x, b, *m, *t, judge, own || own_map ? own_dtheta : b.dtheta, library_gap, rp);
  }
  if (!qk.empty() && m->supports(impl::output::rope_rotate, dtype_of<T>())) {
    // Rotated q/k, judged with the bound of the mistaken layout's own pairs.
    spec::rope rs = s;
    if (info.hooks.rotation) info.hooks.rotation(rs);
    std::optional<impl::rope_contract> layout_own;
    if (info.hooks.rotation && rs.pairs() != s.pairs()) {
      const std::optional<std::int64_t> rseq = rs.stateful() ? own_seq : std::nullopt;
      const double rm = ref::rope_reference(rs, ref::exact_recipe(), rseq)
                            .attention_factor()
                            .convert_to<double>();
      layout_own.emplace(rs, base.st, rseq, rm, base.contract->lib(), base.contract->arithmetic());
    }
    replay_qk(x, b, *m, qk, rs, layout_own ? *layout_own : judge, map, rp);
  }
  return rp;
}

/// RoPE's diagnosis (diagnose_rope): the sample, then on each base its correct outputs and every
/// mistake of the catalogue that applies — a pipeline's own mistakes on it alone, the others on
/// the recipe's.
template <class T>
void rope_as(context& k, const spec::rope& s, std::optional<std::int64_t> seq,
             const std::vector<replay_base>& bases, const table_source* t,
             const std::vector<std::int64_t>& all_pos, const std::vector<qk_source>& qk,
             const std::vector<std::int64_t>& all_qk_pos, evidence_map& ev) {
  const rope_sample<T> x = sample_rope<T>(k, s, seq, t, all_pos, qk, all_qk_pos);
  for (const replay_base& base : bases) {
    const impl::mutant_options mo{base.st, base.rotate_in_output_type, base.inv_freq,
                                  base.rope_theta};
    const base_outputs<T> b =
        correct_outputs(x, *impl::make_control(k.e, mo), *base.contract, t, qk);
    for (const impl::mutant_info& info : impl::mutant_catalogue()) {
      if (std::string_view(info.family) != "rope" || !info.applies(k.e)) continue;
      if (info.base != kernel::strategy::hf && info.base != base.st) continue;
      if (!impl::mutant_replays_on(info, base.st)) continue;
      interruption_point();  // between replays (pev/core/interrupt.h)
      keep_replay(info.id, replay_mistake(k, x, b, info, mo, base, t, qk), ev);
    }
  }
}

template <class T>
void sinusoidal_as(context& k, const spec::sinusoidal& s, const io::array& a,
                   const std::vector<std::int64_t>& all_pos, evidence_map& ev) {
  constexpr format out = format_of<T>();
  const impl::sinusoidal_contract hf(s, kernel::strategy::hf);
  const auto dm = static_cast<std::size_t>(s.d_model);
  // The rows replayed (replay_rows): row e / dm of the sample is row rsel[e / dm] of the dump.
  const std::vector<std::size_t> rsel = replay_rows(all_pos, 1, k.mismatches);
  const std::vector<std::int64_t> pos = positions_of(all_pos, 1, rsel);
  record_replayed(k, {replayed_text(rsel.size(), all_pos.size(), "rows")});
  std::vector<T> mv(dm * pos.size());
  for_each_mistake(k.e, "sinusoidal", impl::output::sinusoidal_pe, dtype_of<T>(), ev,
                   [&](const impl::implementation& m, evidence& x) {
                     m.sinusoidal_pe(pos, std::span<T>(mv));
                     for (std::size_t e = 0; e < mv.size(); ++e) {
                       const double g = element_value<T>(a, rsel[e / dm] * dm + e % dm);
                       const double v = scalar_traits<T>::to_double(mv[e]);
                       const auto col = static_cast<std::int64_t>(e % dm);
                       const double b =
                           hf.bound(pos[e / dm], col, std::max(std::fabs(g), std::fabs(v)), out);
                       x.add(rho_against(g, v, b));
                     }
                   });
}

template <class T>
void alibi_as(context& k, const spec::alibi& s, const io::array* slopes, const io::array* bias,
              const std::vector<std::int64_t>& qs, const std::vector<std::int64_t>& ks,
              evidence_map& ev) {
  constexpr format out = format_of<T>();
  const impl::alibi_contract hf(s, kernel::strategy::hf);
  const std::int64_t H = s.num_heads;
  auto mag = [](double g, double v) { return std::max(std::fabs(g), std::fabs(v)); };
  if (slopes) {
    for_each_mistake(k.e, "alibi", impl::output::alibi_slopes, dtype_of<T>(), ev,
                     [&](const impl::implementation& m, evidence& x) {
                       std::vector<T> mv(static_cast<std::size_t>(H));
                       m.alibi_slopes(std::span<T>(mv));
                       for (std::int64_t h = 0; h < H; ++h) {
                         const auto u = static_cast<std::size_t>(h);
                         const double g = element_value<T>(*slopes, u);
                         const double v = scalar_traits<T>::to_double(mv[u]);
                         x.add(rho_against(g, v, hf.slope_bound(h, mag(g, v), out)));
                       }
                     });
  }
  if (bias) {
    for_each_mistake(k.e, "alibi", impl::output::alibi_bias, dtype_of<T>(), ev,
                     [&](const impl::implementation& m, evidence& x) {
                       std::vector<T> mv(static_cast<std::size_t>(H) * qs.size() * ks.size());
                       m.alibi_bias(qs, ks, std::span<T>(mv));
                       std::size_t e = 0;
                       for (std::int64_t h = 0; h < H; ++h) {
                         for (std::int64_t qi : qs) {
                           for (std::int64_t kj : ks) {
                             const double g = element_value<T>(*bias, e);
                             const double v = scalar_traits<T>::to_double(mv[e++]);
                             x.add(rho_against(g, v, hf.bias_bound(h, kj - qi, mag(g, v), out)));
                           }
                         }
                       }
                     });
  }
}

/// The grade of the rung whose bound `held` names (held_bound's names).
grade rung_grade(const std::string& held) {
  if (held == "exact") return grade::faithful;
  if (held == "drift-free") return grade::drift_free;
  if (held == "vllm-fp16" || held == "vllm-bf16") return grade::recipe_vllm;
  return claim_grade(held);
}

/// When every check the certificate fails lies within the bound `held` wherever that bound is
/// not vacuous, and that bound is vacuous somewhere in it (no replay decided it, checks.h:
/// rungs_holding), the statement of what the recipe cannot certify; else empty. Any other cause
/// of failure (a check beyond the bound, non-finite values, a claim on the library) keeps the
/// hunt.
std::string vacuous_only(const certificate& cert, const std::string& held) {
  const report::certification& z = *cert.certification;
  if (!z.claim_unchecked.empty() || !z.library.outside_class.empty()) return {};
  const grade want = rung_grade(held);
  std::int64_t from = std::numeric_limits<std::int64_t>::max();
  std::uint64_t values = 0;
  std::vector<std::string> where;
  for (const check& c : cert.checks) {
    if (c.best && *c.best <= want) continue;  // holds
    const auto v = c.vacuous.find(held);
    const auto rho = c.recipe_rho.find(held);
    if (v == c.vacuous.end() || rho == c.recipe_rho.end() || !(rho->second <= 1) ||
        c.non_finite > 0 || c.replayed) {
      return {};
    }
    from = std::min(from, v->second.first_position);
    values += v->second.values;
    where.push_back(c.id);
  }
  if (where.empty()) return {};
  return fmt::format(
      "the {} recipe cannot certify {} value(s) of {}, the first at position {}: its bound is "
      "vacuous there (at least the output's range), and the data is within it everywhere else; "
      "no mistake is hunted",
      held, values, fmt::join(where, ", "), from);
}

}  // namespace

void evidence::add(double rho) {
  max_rho = std::max(max_rho, rho);
  sum2 += std::isfinite(rho) ? rho * rho : 1e300;
  ++count;
}

double rho_against(double g, double mv, double b) {
  if (!(std::isfinite(g) && std::isfinite(mv))) {
    return (std::isnan(g) && std::isnan(mv)) || g == mv ? 0.0 : kInf;
  }
  return compare::rho_of(std::fabs(g - mv), b);
}

void add_explanations(const evidence_map& ev, certificate& cert) {
  report::certification& z = *cert.certification;
  if (!z.why) z.why.emplace();
  for (const auto& [id, x] : ev) {
    const double rms = x.count ? std::sqrt(x.sum2 / static_cast<double>(x.count)) : 0;
    z.why->explanations.push_back(
        {id, x.description, x.max_rho, rms, x.max_rho <= kExplainRho, x.digest});
  }
}

void diagnose_rope(context& k, const spec::rope& s, std::optional<std::int64_t> seq,
                   const std::vector<replay_base>& bases, const table_source* t,
                   const std::vector<std::int64_t>& pos, const std::vector<qk_source>& qk,
                   const std::vector<std::int64_t>& qk_pos, evidence_map& ev) {
  const io::array* any = t ? t->cos.a : qk.front().in.get();
  visit_float(any->type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, double>) {
      rope_as<T>(k, s, seq, bases, t, pos, qk, qk_pos, ev);
    }
  });
}

std::vector<std::string> mistake_parameters(const context& k, const spec::rope& s,
                                            std::optional<std::int64_t> seq, const evidence_map& ev,
                                            bool table) {
  std::vector<std::string> out;
  for (const auto& [id, x] : ev) {
    if (x.max_rho > kExplainRho) continue;
    const impl::mutant_info& info = impl::find_mutant(id);
    if (id == "partial-rotary-full") {
      out.push_back(fmt::format("rotated over the whole head (rotary_dim {}; the config says {})",
                                s.head_dim, s.rotary_dim));
    } else if (id == "rotary-freq-over-head-dim" && !table) {
      out.push_back(fmt::format(
          "frequencies over width {} (the spec's rope_theta {:g} with exponent 2i/{}): head_dim, "
          "where the config's rotary_dim is {}",
          s.head_dim, s.rope_theta, s.head_dim, s.rotary_dim));
    } else if (info.hooks.magnitude && !table) {
      const std::optional<std::int64_t> own = s.stateful() ? seq : std::nullopt;
      const double m = impl::make_builtin(k.e, kernel::strategy::hf)->attention_factor(own);
      const double got = impl::make_mutant(id, k.e)->attention_factor(own);
      out.push_back(
          fmt::format("attention factor {:.6g} (the spec's is {:.6g}), by {}", got, m, id));
    }
  }
  return out;
}

void diagnose_sinusoidal(context& k, const spec::sinusoidal& s, const io::array& a,
                         const std::vector<std::int64_t>& pos, evidence_map& ev) {
  visit_float(a.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, double>) sinusoidal_as<T>(k, s, a, pos, ev);
  });
}

void diagnose_alibi(context& k, const spec::alibi& s, const io::array* slopes,
                    const io::array* bias, const std::vector<std::int64_t>& qs,
                    const std::vector<std::int64_t>& ks, evidence_map& ev) {
  visit_float((slopes ? slopes : bias)->type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, double>) alibi_as<T>(k, s, slopes, bias, qs, ks, ev);
  });
}

void diagnose_t5(context& k, const std::vector<std::int64_t>& got,
                 const std::vector<std::int64_t>& distances, evidence_map& ev) {
  for_each_mistake(k.e, "t5", impl::output::t5_buckets, dtype::fp32, ev,
                   [&](const impl::implementation& m, evidence& x) {
                     std::vector<std::int64_t> mv(distances.size());
                     m.t5_buckets(distances, mv);
                     // Integer ids: a mistake explains the data when every id agrees.
                     for (std::size_t e = 0; e < got.size(); ++e) {
                       x.add(got[e] == mv[e] ? 0.0 : kInf);
                     }
                   });
}

void finish(certificate& cert) {
  grade_and_claim(cert);
  report::certification& z = *cert.certification;
  if (!z.why) return;
  auto& x = z.why->explanations;
  z.why->vacuous.clear();
  if (cert.exit_code() == 1) {
    z.why->vacuous = vacuous_only(cert, z.held_to);
    // Data within the recipe's bound wherever it certifies anything: no mistake to name.
    if (!z.why->vacuous.empty()) x.clear();
  }
  std::stable_sort(x.begin(), x.end(), [](const explanation& a, const explanation& b) {
    return a.max_rho != b.max_rho ? a.max_rho < b.max_rho : a.rms_rho < b.rms_rho;
  });
  z.why->named.reset();
  z.why->indistinguishable.clear();
  // Certified: nothing to explain. A shard whose rows hold keeps its first mismatches (beyond
  // the held bound, within a weaker grade's) for `pev merge`.
  if (cert.exit_code() == 0) {
    z.why.reset();
  } else if (!x.empty() && x.front().explains) {
    z.why->named = x.front().mutant;
    for (std::size_t k = 1; k < x.size(); ++k) {
      // The same data, or the same ρ within 2^−6 (docs/numerics.md §13.5): the data cannot tell
      // them apart, and the certificate lists them rather than choosing silently.
      if (x[k].explains &&
          (x[k].digest == x.front().digest || x[k].max_rho <= x.front().max_rho * (1 + 0x1p-6))) {
        z.why->indistinguishable.push_back(x[k].mutant);
      }
    }
  }
}

}  // namespace pev::certify::detail
