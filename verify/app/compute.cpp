// The values of `pev compute --strategy NAME` and pev.compute: a built-in kernel's output in the
// shapes of `pev reference` (docs/design.md §5.4), so that strategies can be dumped and compared
// with the reference file against file.

#include <memory>
#include <optional>
#include <span>
#include <string>

#include "pev/app/positions.h"
#include "pev/app/progress.h"
#include "pev/app/shapes.h"
#include "pev/app/values.h"
#include "pev/core/error.h"
#include "pev/kernel/absolute.h"
#include "pev/kernel/relative.h"
#include "pev/kernel/rope.h"
#include "pev/kernel/strategy.h"
#include "pev/scalar/round.h"
#include "pev/spec/spec.h"

namespace pev::app {
namespace {

template <class T>
void append(output& out, const std::vector<T>& v) {
  for (const T& x : v) out.main.values.push_back(to_real(x));
}

// Where a streamed table goes (write_compute); without one, tables are filled into `out`
// (compute_array).
struct stream_to {
  out_format format;
  std::filesystem::path file;
};

// With `sink`: writes the table (streamed, one chunk of rows at a time) and returns true. Else,
// and for inv_freq and attention_factor, fills `out` for the caller to write.
template <class T>
bool fill_rope(output& out, const spec::rope& s, kernel::strategy st,
               std::vector<std::int64_t>& positions, std::optional<std::int64_t> seq_len,
               const stream_to* sink) {
  const kernel::rope_kernel k(
      s, st, s.stateful() ? std::optional(stateful_seq_len(positions, seq_len)) : std::nullopt);
  if (out.what == "inv_freq") {
    shape_vector(out, "inv_freq", s.pairs(), "pair");
    for (float f : k.inv_freq()) out.main.values.push_back(to_real(round_to<T>(to_real(f))));
    return false;
  }
  if (out.what == "attention_factor") {
    shape_scalar(out, "attention_factor");
    out.main.values = {to_real(k.attention_factor())};
    return false;
  }
  if (out.what != "table") what_mismatch(out.what, s, "table, inv_freq, attention_factor");
  // In memory: without a sink, and for MRoPE (docs/encodings.md §4.6), whose positions are
  // [S, T] and each token's row composes the kernel's 1-D rows of its S stream positions, pair i
  // from its stream's.
  if (!sink || s.streams() > 1) {
    const std::vector<std::int64_t>& pos = positions;
    const auto S = static_cast<std::size_t>(s.streams());
    const std::size_t rows = pos.size() / S;
    shape_table(out, s.pairs(), pos, s.streams());
    const auto n = static_cast<std::size_t>(s.pairs());
    const std::vector<std::int64_t> map = spec::mrope_streams(s);
    std::vector<T> c, sn, all_c(n * S), all_s(n * S);
    std::vector<std::int64_t> sp(S);
    progress bar(rows, "compute");
    const std::size_t chunk = S == 1 ? row_stream::chunk_rows(2 * n) : 1;
    for (std::size_t r0 = 0; r0 < rows; r0 += chunk) {
      const std::size_t r1 = std::min(rows, r0 + chunk);
      c.resize((r1 - r0) * n);
      sn.resize((r1 - r0) * n);
      if (S == 1) {
        k.table<T>(std::span(pos).subspan(r0, r1 - r0), c, sn);
      } else {
        for (std::size_t st = 0; st < S; ++st) sp[st] = pos[st * rows + r0];
        k.table<T>(sp, all_c, all_s);
        spec::select_streams<T>(map, 1, all_c, c);
        spec::select_streams<T>(map, 1, all_s, sn);
      }
      for (std::size_t q = 0; q < c.size(); ++q) {
        out.main.values.push_back(to_real(c[q]));
        out.main.values.push_back(to_real(sn[q]));
      }
      bar.step(r1);
    }
    split_table(out);
    return false;
  }
  shape_streamed_table(out, s.pairs(), std::move(positions));
  const std::vector<std::int64_t>& pos = *out.positions;
  const auto n = static_cast<std::size_t>(s.pairs());
  std::vector<T> c, sn;
  progress bar(pos.size(), "compute");
  row_stream rows;
  rows.rows = pos.size();
  rows.width = 2 * n;
  rows.fill = [&](std::size_t r0, std::size_t r1, std::byte* bytes) {
    c.resize((r1 - r0) * n);
    sn.resize((r1 - r0) * n);
    k.table<T>(std::span(pos).subspan(r0, r1 - r0), c, sn);
    store_interleaved(c, sn, bytes);
    bar.step(r1);
  };
  write_output(out, rows, sink->format, sink->file);
  return true;
}

// Fills `out` for the caller to write, or writes it (a streamed table) and returns true.
template <class T>
bool fill(output& out, const spec::encoding& e, kernel::strategy st, std::vector<std::int64_t>& pos,
          std::optional<std::int64_t> seq_len, const stream_to* sink) {
  if (const auto* s = std::get_if<spec::rope>(&e)) {
    return fill_rope<T>(out, *s, st, pos, seq_len, sink);
  }
  const bool sinusoidal = std::holds_alternative<spec::sinusoidal>(e);
  if (sinusoidal || std::holds_alternative<spec::learned>(e)) {
    if (out.what != "pe") what_mismatch(out.what, e, "pe");
    const std::int64_t d =
        sinusoidal ? std::get<spec::sinusoidal>(e).d_model : std::get<spec::learned>(e).d_model;
    auto rows_of = [&](std::span<const std::int64_t> p, std::span<T> v) {
      if (sinusoidal) {
        kernel::sinusoidal_table<T>(std::get<spec::sinusoidal>(e), st, p, v);
      } else {
        kernel::learned_table<T>(std::get<spec::learned>(e), st, p, v);
      }
    };
    if (!sink) {
      shape_pe(out, d, pos);
      std::vector<T> v(pos.size() * static_cast<std::size_t>(d));
      rows_of(pos, v);
      append(out, v);
      return false;
    }
    // Streamed, one chunk of rows at a time (docs/design.md §5.4).
    shape_streamed_pe(out, d, std::move(pos));
    const std::vector<std::int64_t>& p = *out.positions;
    std::vector<T> v;
    progress bar(p.size(), "compute");
    row_stream rows;
    rows.rows = p.size();
    rows.width = static_cast<std::size_t>(d);
    rows.fill = [&](std::size_t r0, std::size_t r1, std::byte* bytes) {
      v.resize((r1 - r0) * static_cast<std::size_t>(d));
      rows_of(std::span(p).subspan(r0, r1 - r0), std::span<T>(v));
      store_values(v, bytes);
      bar.step(r1);
    };
    write_output(out, rows, sink->format, sink->file);
    return true;
  }
  if (const auto* s = std::get_if<spec::alibi>(&e)) {
    if (out.what == "slopes") {
      shape_vector(out, "slopes", s->num_heads, "head");
      std::vector<T> v(static_cast<std::size_t>(s->num_heads));
      kernel::alibi_slopes<T>(*s, st, v);
      append(out, v);
      return false;
    }
    if (out.what != "bias") what_mismatch(out.what, e, "bias, slopes");
    shape_bias(out, s->num_heads, pos);
    std::vector<T> v(static_cast<std::size_t>(s->num_heads) * pos.size() * pos.size());
    kernel::alibi_bias<T>(*s, st, pos, pos, v);
    append(out, v);
    return false;
  }
  if (out.what != "buckets") what_mismatch(out.what, e, "buckets");
  out.dtype = dtype::int64;
  shape_buckets(out, pos);
  out.main.ints.resize(pos.size());
  if (const auto* s = std::get_if<spec::t5>(&e)) {
    kernel::t5_buckets(*s, st, pos, out.main.ints);
  } else {
    kernel::shaw_clip(std::get<spec::shaw>(e), pos, out.main.ints);
  }
  return false;
}

}  // namespace

void fill_compute(output& out, const spec::encoding& e, kernel::strategy st,
                  const std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len) {
  if (!out.dtype) throw error("kernels produce fp32, fp16 or bf16, not exact values");
  std::vector<std::int64_t> p = pos;
  visit_output_float(
      *out.dtype,
      [&](auto tag) { return fill<typename decltype(tag)::type>(out, e, st, p, seq_len, nullptr); },
      "a kernel's output");
}

void write_compute(output& out, const spec::encoding& e, kernel::strategy st,
                   std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len,
                   out_format format, const std::filesystem::path& file) {
  const stream_to sink{format, file};
  const bool written = visit_output_float(*out.dtype, [&](auto tag) {
    return fill<typename decltype(tag)::type>(out, e, st, pos, seq_len, &sink);
  });
  if (!written) write_output(out, format, file);
}

io::array compute_array(output& out, const spec::encoding& e, kernel::strategy st,
                        const std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len) {
  fill_compute(out, e, st, pos, seq_len);
  return to_array(out.main, out.dtype);
}

}  // namespace pev::app
