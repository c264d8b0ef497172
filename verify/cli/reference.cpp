// `pev reference`: the arbitrary-precision reference of an encoding at given positions
// (docs/design.md §5.4).

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "commands.h"
#include "layout.h"
#include "output.h"
#include "pev/core/error.h"
#include "pev/ref/fast.h"
#include "pev/ref/recipe.h"
#include "pev/ref/relative.h"
#include "pev/ref/rope.h"
#include "pev/ref/sinusoidal.h"
#include "pev/scalar/round.h"
#include "pev/spec/spec.h"

namespace pev::cli {
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

std::optional<row_stream> reference_rows(output& out, const spec::encoding& e,
                                         const std::string& recipe, std::vector<std::int64_t>& pos,
                                         std::optional<std::int64_t> seq_len, bool mpfr) {
  if (!out.dtype || recipe != "exact") return std::nullopt;
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

command add_reference(CLI::App& app) {
  struct state {
    encoding_options o;
    std::string dtype = "exact";
    std::string recipe = "exact";
    unsigned precision = 0;
    std::string reference = "fast";
  };
  auto st = std::make_shared<state>();
  CLI::App* cmd = app.add_subcommand(
      "reference",
      "Arbitrary-precision reference values (MPFR) of an encoding at given positions.\n"
      "Shapes: --what table → [P, rot/2, 2] (m·cos, m·sin per pair; safetensors: cos, sin "
      "[P, rot/2]); inv_freq → [rot/2]; attention_factor → one number; pe → [P, d_model]; "
      "bias → ALiBi [H, P, P] (query × key positions); slopes → [H]; buckets → [P] for "
      "relative distances key − query. exact and fp64 are stored as float64 in npy/safetensors.");
  st->o.add_to(*cmd);
  cmd->add_option("--dtype", st->dtype,
                  "exact (MPFR value), fp64, fp32, fp16 or bf16: one correct rounding of the "
                  "reference to that format")
      ->capture_default_str();
  cmd->add_option("--recipe", st->recipe,
                  "exact (the mathematical definition), hf (transformers' fp32 pipeline) or ggml "
                  "(llama.cpp's fp32 recurrence): round only where the recipe rounds")
      ->capture_default_str();
  cmd->add_option("--reference", st->reference,
                  "fast or mpfr: how a RoPE table or sinusoidal PE in fp64/fp32/fp16/bf16 with the "
                  "exact recipe is computed. fast (the fast exact reference) gives the same bits "
                  "as mpfr, faster, streamed to the output one chunk at a time (RoPE tables with "
                  "mpfr too). --dtype exact, the hf/ggml recipes and other outputs use MPFR in "
                  "memory (at most 2^26 values a request)")
      ->capture_default_str();
  cmd->add_option(
      "--precision", st->precision,
      "MPFR precision in bits (default " + std::to_string(default_precision_bits()) + ")");
  return {cmd, [st]() -> int {
            if (st->precision) set_precision_bits(st->precision);
            st->o.check_ranges();
            const spec::encoding e = st->o.encoding();
            st->o.refuse_inputs_inside_out(e);
            output out = st->o.start_output(e, parse_out_dtype(st->dtype));
            out.recipe = st->recipe;
            out.precision_bits = precision_bits();
            if (st->reference != "fast" && st->reference != "mpfr") {
              throw error("--reference: expected fast or mpfr, got '" + st->reference + "'");
            }
            std::vector<std::int64_t> pos = st->o.positions_for(e, out.what);
            const out_format format = parse_out_format(st->o.format);
            // RoPE tables and sinusoidal PE in a float dtype stream from the fast references
            // (docs/design.md §5.4); the rest is filled in memory.
            if (const std::optional<row_stream> rows = reference_rows(
                    out, e, st->recipe, pos, st->o.seq_len, st->reference == "mpfr")) {
              write_output(out, *rows, format, st->o.out);
              return 0;
            }
            fill_reference(out, e, ref::find_recipe(st->recipe), pos, st->o.seq_len);
            write_output(out, format, st->o.out);
            return 0;
          }};
}

}  // namespace pev::cli
