#pragma once
// Output shapes shared by `pev reference` and `pev compute` (docs/design.md §5.4): the same names,
// shapes, csv columns and safetensors tensors for the reference and for every strategy, so that
// their outputs can be compared file against file.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "pev/app/output.h"
#include "pev/scalar/dtype.h"
#include "pev/scalar/traits.h"
#include "pev/spec/spec.h"

namespace pev::app {

/// The family's main output: table (rope), pe (sinusoidal, learned), bias (alibi), buckets (t5,
/// shaw).
std::string default_what(const spec::encoding& e);
/// Throws the bad-usage error for a --what that the family does not have.
[[noreturn]] void what_mismatch(const std::string& what, const spec::encoding& e,
                                const char* allowed);
/// Whether --what needs positions.
bool what_needs_positions(const std::string& what);
/// An output of `what` (empty: the family's main output, default_what) of `e` in dtype `t` (none:
/// exact), with the provenance fields set (what, dtype, spec, digits: significant digits of exact
/// text, 0 for the default).
output start_output(const spec::encoding& e, const std::string& what, std::optional<dtype> t,
                    int digits = 0);

/// RoPE table [P, pairs, 2] of (cos, sin); safetensors parts cos, sin [P, pairs]. Values: reserve
/// only; at most 2^26 (each an MPFR number until written). `pos` holds `streams` rows of positions
/// for MRoPE (docs/encodings.md §4.6): [streams, P].
void shape_table(output& out, std::int64_t pairs, const std::vector<std::int64_t>& pos,
                 std::int64_t streams = 1);
/// The same shapes and parts for a table written by a row_stream (one chunk in memory: no limit
/// beyond the positions of a request); the positions move into out.positions (held once).
void shape_streamed_table(output& out, std::int64_t pairs, std::vector<std::int64_t>&& pos);
/// After filling out.main.values, copies them into the cos and sin parts (a streamed table: the
/// parts' names and shapes only).
void split_table(output& out);
/// Rows of a table for a row_stream: cos and sin ([rows, pairs] each) interleaved as the table's
/// [rows, pairs, 2], in T's little-endian encodings.
template <class T>
void store_interleaved(const std::vector<T>& cos, const std::vector<T>& sin, std::byte* out) {
  using tr = scalar_traits<T>;
  using bits = typename tr::bits_type;
  for (std::size_t k = 0; k < cos.size(); ++k) {
    bits b[2] = {tr::to_bits(cos[k]), tr::to_bits(sin[k])};
    if constexpr (std::endian::native != std::endian::little) {
      for (bits& x : b) {
        if constexpr (sizeof(bits) == 2) x = __builtin_bswap16(x);
        if constexpr (sizeof(bits) == 4) x = __builtin_bswap32(x);
        if constexpr (sizeof(bits) == 8) x = __builtin_bswap64(x);
      }
    }
    std::memcpy(out + 2 * k * sizeof(bits), b, sizeof b);
  }
}
/// Values in T's little-endian encodings, for a row_stream.
template <class T>
void store_values(const std::vector<T>& v, std::byte* out) {
  using tr = scalar_traits<T>;
  using bits = typename tr::bits_type;
  for (std::size_t k = 0; k < v.size(); ++k) {
    bits b = tr::to_bits(v[k]);
    if constexpr (std::endian::native != std::endian::little) {
      if constexpr (sizeof(bits) == 2) b = __builtin_bswap16(b);
      if constexpr (sizeof(bits) == 4) b = __builtin_bswap32(b);
      if constexpr (sizeof(bits) == 8) b = __builtin_bswap64(b);
    }
    std::memcpy(out + k * sizeof(bits), &b, sizeof b);
  }
}
/// PE [P, d].
void shape_pe(output& out, std::int64_t d, const std::vector<std::int64_t>& pos);
/// The same shape for PE rows written by a row_stream (no limit beyond the positions of a
/// request); the positions move into out.positions.
void shape_streamed_pe(output& out, std::int64_t d, std::vector<std::int64_t>&& pos);
/// ALiBi bias [H, P, P] over query × key positions.
void shape_bias(output& out, std::int64_t heads, const std::vector<std::int64_t>& pos);
/// A vector indexed by `row_label` (inv_freq by pair, slopes by head).
void shape_vector(output& out, const std::string& name, std::int64_t n,
                  const std::string& row_label);
/// One number.
void shape_scalar(output& out, const std::string& name);
/// Bucket ids [P] for relative distances.
void shape_buckets(output& out, const std::vector<std::int64_t>& distances);

}  // namespace pev::app
