#pragma once
// SPEC strings: `family[:key=value,...]` (docs/design.md §5.2), e.g.
//   sinusoidal:d_model=512
//   rope:head_dim=128,rope_theta=500000,rope_type=llama3,factor=8,low_freq_factor=1,
//        high_freq_factor=4,original_max_position_embeddings=8192,layout=neox
// Lists are written in brackets: short_factor=[1.0,1.05,...]. Booleans: true/false/1/0. Numbers are
// decimal (std::from_chars: no leading '+', no hex, no nan/inf, no trailing characters); integer
// keys also take an integral decimal such as 8192.0. Spaces around keys and values are ignored.
// Every key at most once.
//
// clang-format off
// Keys per family (required ones marked *):
//   sinusoidal: d_model*, base, layout (interleaved|blocked), freq_shift (blocked only)
//   learned:    num_positions*, d_model*, target_positions, align_corners, offset, table (file path,
//               stored in table_file and loaded by the caller; it cannot contain ','),
//               seed (when no table)
//   alibi:      num_heads*, max_bias
//   t5:         num_buckets, max_distance, bidirectional
//   shaw:       max_relative_position*
//   rope:       head_dim*, partial_rotary_factor | rotary_dim, rope_theta,
//               layout (neox|interleaved),
//               rope_type (default|linear|ntk|dynamic|yarn|llama3|longrope|proportional),
//               max_position_embeddings, mrope_section ([t,h,w] pairs, or ggml's
//               [t,h,w,e]), mrope_interleaved (docs/encodings.md §4.6), and per rope_type:
//                 default:       freq_scale
//                 linear, ntk:   factor*
//                 dynamic:       factor*, L*
//                 yarn:          factor*, Lo*, beta_fast, beta_slow, truncate, mscale,
//                                mscale_all_dim, attention_factor
//                 llama3:        factor*, Lo*, low_freq_factor*, high_freq_factor*
//                 longrope:      short_factor*, long_factor*, Lo*, factor (else L/Lo, L then
//                                required), attention_factor
//                 proportional:  factor (default 1), partial_rotary_factor (default 1)
//               (L = max_position_embeddings, Lo = original_max_position_embeddings).
//   ggml:       llama.cpp's ggml_rope_ext(…, freq_factors, n_dims, mode, n_ctx_orig, freq_base,
//               freq_scale, ext_factor, attn_factor, beta_fast, beta_slow) in its own names
//               (docs/encodings.md §8.7): head_dim* (the tensor's ne0), mode* (normal|neox, or
//               ggml's 0|2), n_dims (default head_dim), freq_base (10000), freq_scale (1),
//               ext_factor (0; any value in [0, 1]), attn_factor (1), beta_fast (32),
//               beta_slow (1), n_ctx_orig (0; 0 allowed), freq_factors ([c_0,…] or a file: an
//               npy array, or a safetensors tensor rope_freqs.weight / rope_freqs / the only
//               one, of n_dims/2 values, the GGUF rope_freqs tensor). Every value is taken as the
//               float32 ggml receives.
// clang-format on
//
// A SPEC is pev's own, hand-written input, so it is strict: an unknown key, a malformed value, and
// every condition transformers only warns about in a config.json (factor < 1, beta_fast <
// beta_slow, high ≤ low frequency factor, …) are errors (pev::error naming the key and the rule).
// config.json input follows transformers instead (spec/config.h).

#include <cstdint>
#include <string_view>
#include <vector>

#include "pev/core/error.h"
#include "pev/spec/spec.h"

namespace pev::spec {

/// Parses and validates a SPEC string; throws pev::error naming the key and the rule. Warnings go
/// to stderr (see the overload).
encoding parse_spec(std::string_view text);

/// Same, with warnings sent to `warn`. The one condition a SPEC only warns about: a yarn `factor`
/// that differs from max_position_embeddings/original_max_position_embeddings (when that ratio is
/// not 1), which transformers also only warns about and resolves in favour of the explicit factor.
encoding parse_spec(std::string_view text, const warning_sink& warn);

/// The table of a `learned` SPEC without a table file (`seed=S`, default 0), row-major
/// [num_positions, d_model]: element k is v_k / 2^23 with v_k = (z_k >> 40) − 2^23, an integer in
/// [−2^23, 2^23), where z_k is the (k+1)-th output of splitmix64 started from state `seed`
/// (state += 0x9e3779b97f4a7c15; z = (state ^ (state >> 30))·0xbf58476d1ce4e5b9;
/// z = (z ^ (z >> 27))·0x94d049bb133111eb; z ^= z >> 31). Every value lies in [−1, 1) and is
/// exactly representable in float32, so a float32 dump of the table is bit-exact.
/// The per-pair factors of a ggml rope (the GGUF `rope_freqs` tensor) from the bytes of an npy
/// file or a safetensors file (a tensor named rope_freqs.weight or rope_freqs, or the only one),
/// of `pairs` values (leading dimensions of size 1 are dropped); `source` names the file in
/// messages. Throws pev::error for another shape, an integer dtype or a malformed file.
std::vector<double> freq_factors_from_bytes(std::string_view bytes, std::string_view source,
                                            std::int64_t pairs);

/// The largest freq_factors file read (n_dims/2 ≤ 32768 values).
inline constexpr std::uint64_t max_freq_factors_bytes = std::uint64_t{16} << 20;

std::vector<double> learned_table_from_seed(std::uint64_t seed, std::int64_t num_positions,
                                            std::int64_t d_model);

}  // namespace pev::spec
