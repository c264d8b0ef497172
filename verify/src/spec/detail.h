#pragma once
// Internals shared by the spec sources: which rope keys apply to which rope_type, number formatting
// that round-trips, and the limits validate() enforces (so parsers can quote them).

#include <cstdint>
#include <string>
#include <string_view>

#include "pev/core/names.h"
#include "pev/spec/spec.h"

namespace pev::spec::detail {

/// Largest accepted L and Lo (exclusive): 2^40 positions is far beyond any model and keeps every
/// product with a head dimension inside int64 and exactly representable in double.
inline constexpr std::int64_t max_context = std::int64_t{1} << 40;
inline constexpr std::int64_t max_head_dim = 65536;
inline constexpr std::int64_t max_sinusoidal_d_model = std::int64_t{1} << 20;
inline constexpr std::int64_t max_learned_elements = std::int64_t{1} << 28;
/// A table generated from `seed` (a synthetic test table) holds at most 2^24 values (128 MiB as
/// double, well under a second to fill): a short SPEC string must not make pev allocate gigabytes.
/// Larger tables come from a file, whose size bounds them.
inline constexpr std::int64_t max_generated_learned_elements = std::int64_t{1} << 24;
inline constexpr std::int64_t max_heads = 65536;

/// An error message quoting user input, cut to 400 characters (a 100 kB SPEC must not produce a
/// 100 kB message); the cut is marked with how much was dropped.
inline std::string clip_message(std::string m) {
  constexpr std::size_t max = 400;
  if (m.size() <= max) return m;
  const std::size_t dropped = m.size() - max;
  m.resize(max);
  return m + "… (" + std::to_string(dropped) + " more characters)";
}
inline constexpr std::int64_t max_t5_buckets = std::int64_t{1} << 20;
inline constexpr std::int64_t max_shaw = std::int64_t{1} << 31;

/// The names of rope_type (transformers' rope_type values, then the ggml form's own), rope_layout
/// and sinusoidal_layout (docs/design.md §11.11).
inline constexpr name_table<rope_type, 9> rope_type_names({{{rope_type::default_, "default"},
                                                            {rope_type::linear, "linear"},
                                                            {rope_type::ntk, "ntk"},
                                                            {rope_type::dynamic, "dynamic"},
                                                            {rope_type::yarn, "yarn"},
                                                            {rope_type::llama3, "llama3"},
                                                            {rope_type::longrope, "longrope"},
                                                            {rope_type::proportional,
                                                             "proportional"},
                                                            {rope_type::ggml, "ggml"}}});
inline constexpr name_table<rope_layout, 2> rope_layout_names(
    {{{rope_layout::neox, "neox"}, {rope_layout::interleaved, "interleaved"}}});
inline constexpr name_table<sinusoidal_layout, 2> sinusoidal_layout_names(
    {{{sinusoidal_layout::interleaved, "interleaved"}, {sinusoidal_layout::blocked, "blocked"}}});

/// True when the rope key `key` (a SPEC key, which is also the HF key) has a meaning for rope_type
/// `t`. Keys shared by every rope_type (head_dim, rope_theta, …) return true for all of them.
bool rope_key_applies(std::string_view key, rope_type t);

/// The rope_types a rope key applies to, for messages ("yarn, longrope").
std::string rope_types_of_key(std::string_view key);

/// Shortest decimal text that parses back to exactly `v` (integers without exponent up to 1e16).
std::string format_number(double v);

/// The rotary dimension transformers computes: int(head_dim·partial_rotary_factor), the product in
/// double and truncated toward zero as Python's int(); head_dim for `proportional`.
std::int64_t expected_rotary_dim(std::int64_t head_dim, double partial_rotary_factor, rope_type t);

}  // namespace pev::spec::detail
