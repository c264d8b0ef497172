// The values of `pev reference` and pev.reference: the arbitrary-precision reference of an encoding
// at given positions (docs/design.md §5.4).

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "pev/app/positions.h"
#include "pev/app/progress.h"
#include "pev/app/shapes.h"
#include "pev/app/values.h"
#include "pev/core/error.h"
#include "pev/ref/fast.h"
#include "pev/ref/recipe.h"
#include "pev/ref/relative.h"
#include "pev/ref/rope.h"
#include "pev/ref/sinusoidal.h"
#include "pev/scalar/round.h"
#include "pev/spec/spec.h"

namespace pev::app {
namespace {

// A RoPE table in the output dtype T as a row_stream: the fast reference (fast = true, identical
// bits) or the MPFR rows rounded to T, chunk by chunk.
template <class T>
row_stream rope_rows(output& out, const spec::rope& s, std::vector<std::int64_t>& positions,
                     std::optional<std::int64_t> seq_len, bool fast) {
  shape_streamed_table(out, s.pairs(), std::move(positions));
  const std::vector<std::int64_t>& pos = *out.positions;
  const auto n = static_cast<std::size_t>(s.pairs());
  struct state {
    std::optional<ref::fast_rope_reference> fr;
    std::optional<ref::rope_reference> rr;
    std::vector<T> c, sn;
    progress bar;
  };
  auto st = std::make_shared<state>(state{{}, {}, {}, {}, progress(pos.size(), "reference")});
  if (fast) {
    st->fr.emplace(s, seq_len);
  } else {
    st->rr.emplace(s, ref::exact_recipe(), seq_len);
  }
  row_stream rows;
  rows.rows = pos.size();
  rows.width = 2 * n;
  rows.fill = [st, &pos, n](std::size_t r0, std::size_t r1, std::byte* bytes) {
    st->c.resize((r1 - r0) * n);
    st->sn.resize((r1 - r0) * n);
    if (st->fr) {
      st->fr->template table<T>(std::span(pos).subspan(r0, r1 - r0), st->c, st->sn);
    } else {
      for (std::size_t r = r0; r < r1; ++r) {
        const auto row = st->rr->row(pos[r]);
        for (std::size_t i = 0; i < n; ++i) {
          st->c[(r - r0) * n + i] = round_to<T>(row[i].cos);
          st->sn[(r - r0) * n + i] = round_to<T>(row[i].sin);
        }
      }
    }
    store_interleaved(st->c, st->sn, bytes);
    st->bar.step(r1);
  };
  return rows;
}

// Sinusoidal PE in the output dtype T as a row_stream, from the fast sinusoidal reference (the
// same bits as MPFR rounded once).
template <class T>
row_stream pe_rows(output& out, const spec::sinusoidal& s, std::vector<std::int64_t>& positions) {
  shape_streamed_pe(out, s.d_model, std::move(positions));
  const std::vector<std::int64_t>& pos = *out.positions;
  const auto d = static_cast<std::size_t>(s.d_model);
  struct state {
    ref::fast_sinusoidal_reference fr;
    std::vector<T> v;
    progress bar;
  };
  auto st = std::make_shared<state>(
      state{ref::fast_sinusoidal_reference(s), {}, progress(pos.size(), "reference")});
  row_stream rows;
  rows.rows = pos.size();
  rows.width = d;
  rows.fill = [st, &pos, d](std::size_t r0, std::size_t r1, std::byte* bytes) {
    st->v.resize((r1 - r0) * d);
    st->fr.template pe<T>(std::span(pos).subspan(r0, r1 - r0), std::span<T>(st->v));
    store_values(st->v, bytes);
    st->bar.step(r1);
  };
  return rows;
}

void fill_rope(output& out, const spec::rope& s, const ref::recipe& r,
               const std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len) {
  const ref::rope_reference rr(
      s, r, s.stateful() ? std::optional(stateful_seq_len(pos, seq_len)) : std::nullopt);
  if (out.what == "inv_freq") {
    shape_vector(out, "inv_freq", s.pairs(), "pair");
    out.main.values = rr.inv_freq();
    return;
  }
  if (out.what == "attention_factor") {
    shape_scalar(out, "attention_factor");
    out.main.values = {rr.attention_factor()};
    return;
  }
  if (out.what != "table") what_mismatch(out.what, s, "table, inv_freq, attention_factor");
  // MRoPE (docs/encodings.md §4.6): pos is [S, T]; row t takes pair i at its stream's position.
  const auto S = static_cast<std::size_t>(s.streams());
  const std::size_t T = pos.size() / S;
  shape_table(out, s.pairs(), pos, s.streams());
  progress bar(T, "reference");
  std::vector<std::int64_t> sp(S);
  for (std::size_t k = 0; k < T; ++k) {
    for (std::size_t st = 0; st < S; ++st) sp[st] = pos[st * T + k];
    for (auto& cs : S > 1 ? rr.row(sp) : rr.row(pos[k])) {
      out.main.values.push_back(std::move(cs.cos));
      out.main.values.push_back(std::move(cs.sin));
    }
    bar.step(k + 1);
  }
  split_table(out);
}

template <class RowFn>
void fill_pe(output& out, const spec::encoding& e, std::int64_t d,
             const std::vector<std::int64_t>& pos, RowFn row) {
  if (out.what != "pe") what_mismatch(out.what, e, "pe");
  shape_pe(out, d, pos);
  progress bar(pos.size(), "reference");
  for (std::size_t k = 0; k < pos.size(); ++k) {
    for (auto& v : row(pos[k])) out.main.values.push_back(std::move(v));
    bar.step(k + 1);
  }
}

void fill_alibi(output& out, const spec::alibi& s, const ref::recipe& r,
                const std::vector<std::int64_t>& pos) {
  const auto slopes = ref::alibi_slopes(s, r);
  if (out.what == "slopes") {
    shape_vector(out, "slopes", s.num_heads, "head");
    out.main.values = slopes;
    return;
  }
  if (out.what != "bias") what_mismatch(out.what, s, "bias, slopes");
  shape_bias(out, s.num_heads, pos);
  for (const auto& m : slopes) {
    for (auto i : pos) {
      for (auto j : pos) out.main.values.push_back(ref::alibi_bias(m, i, j));
    }
  }
}

}  // namespace

std::optional<row_stream> reference_rows(output& out, const spec::encoding& e, const ref::recipe& r,
                                         std::vector<std::int64_t>& pos,
                                         std::optional<std::int64_t> seq_len, bool mpfr) {
  if (!out.dtype || r.name != "exact") return std::nullopt;
  if (const auto* s = std::get_if<spec::rope>(&e)) {
    // MRoPE's [S, T] positions take the in-memory path (docs/encodings.md §4.6).
    if (out.what != "table" || s->streams() > 1) return std::nullopt;
    const std::optional<std::int64_t> len =
        s->stateful() ? std::optional(stateful_seq_len(pos, seq_len)) : std::nullopt;
    return visit_float(*out.dtype, [&](auto tag) {
      return rope_rows<typename decltype(tag)::type>(out, *s, pos, len, !mpfr);
    });
  }
  if (const auto* s = std::get_if<spec::sinusoidal>(&e)) {
    if (out.what != "pe" || mpfr) return std::nullopt;
    return visit_float(
        *out.dtype, [&](auto tag) { return pe_rows<typename decltype(tag)::type>(out, *s, pos); });
  }
  return std::nullopt;
}

void fill_reference(output& out, const spec::encoding& e, const ref::recipe& r,
                    const std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len) {
  if (const auto* s = std::get_if<spec::rope>(&e)) {
    fill_rope(out, *s, r, pos, seq_len);
  } else if (const auto* s = std::get_if<spec::sinusoidal>(&e)) {
    fill_pe(out, e, s->d_model, pos, [&](std::int64_t p) { return ref::sinusoidal_row(*s, p, r); });
  } else if (const auto* s = std::get_if<spec::learned>(&e)) {
    fill_pe(out, e, s->d_model, pos, [&](std::int64_t p) { return ref::learned_row(*s, p, r); });
  } else if (const auto* s = std::get_if<spec::alibi>(&e)) {
    fill_alibi(out, *s, r, pos);
  } else {
    if (out.what != "buckets") what_mismatch(out.what, e, "buckets");
    if (out.dtype) {
      throw error("--dtype does not apply to --what buckets (bucket ids are integers)");
    }
    out.dtype = dtype::int64;
    shape_buckets(out, pos);
    for (auto d : pos) {
      out.main.ints.push_back(std::holds_alternative<spec::t5>(e)
                                  ? ref::t5_bucket(std::get<spec::t5>(e), d, r)
                                  : ref::shaw_clip(std::get<spec::shaw>(e), d));
    }
  }
}

void write_reference(output& out, const spec::encoding& e, const ref::recipe& r,
                     std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len, bool mpfr,
                     out_format format, const std::filesystem::path& file) {
  // RoPE tables and sinusoidal PE in a float dtype stream from the fast references
  // (docs/design.md §5.4); the rest is filled in memory.
  if (const std::optional<row_stream> rows = reference_rows(out, e, r, pos, seq_len, mpfr)) {
    write_output(out, *rows, format, file);
    return;
  }
  fill_reference(out, e, r, pos, seq_len);
  write_output(out, format, file);
}

io::array reference_array(output& out, const spec::encoding& e, const ref::recipe& r,
                          std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len) {
  // The outputs the CLI streams come from the fast references, chunk by chunk into the array
  // (the same bytes); the rest from MPFR values in memory.
  if (const std::optional<row_stream> rows = reference_rows(out, e, r, pos, seq_len, false)) {
    io::array v;
    v.type = *out.dtype;
    v.shape = out.main.shape;
    const std::size_t es = size_of(v.type), chunk = row_stream::chunk_rows(rows->width);
    v.data.resize(rows->rows * rows->width * es);
    for (std::size_t r0 = 0; r0 < rows->rows; r0 += chunk) {
      const std::size_t r1 = std::min(rows->rows, r0 + chunk);
      rows->fill(r0, r1, v.data.mutable_data() + r0 * rows->width * es);
    }
    return v;
  }
  fill_reference(out, e, r, pos, seq_len);
  return to_array(out.main, out.dtype);
}

}  // namespace pev::app
