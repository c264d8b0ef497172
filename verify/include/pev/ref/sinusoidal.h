#pragma once
// Sinusoidal and learned absolute encodings (docs/encodings.md §2).

#include <cstdint>
#include <vector>

#include "pev/core/real.h"
#include "pev/ref/recipe.h"
#include "pev/spec/spec.h"

namespace pev::ref {

/// Per-column frequencies of the sinusoidal table (length d_model; the padding column of an odd
/// blocked table has frequency 0).
std::vector<real> sinusoidal_frequencies(const spec::sinusoidal& s,
                                         const recipe& r = exact_recipe());

/// PE(p, ·): one row of the table, length d_model, in the spec's layout.
std::vector<real> sinusoidal_row(const spec::sinusoidal& s, std::int64_t p,
                                 const recipe& r = exact_recipe());

/// Row t of the learned table: a lookup (target_positions 0) or the linear interpolation of the
/// table to target_positions rows, at row t + offset. Throws pev::error when that row is outside
/// the table.
std::vector<real> learned_row(const spec::learned& s, std::int64_t t,
                              const recipe& r = exact_recipe());

/// Where the exact row of position t comes from (docs/encodings.md §2.4): the value of column c is
/// (table[i0][c]·(den − rem) + table[i1][c]·rem)/den exactly (rem 0: the stored row i0; a lookup:
/// i0 = t + offset). The source index of an interpolated row is the rational
/// t′·(L − 1)/(L′ − 1) (align_corners) or ((2t′ + 1)·L − L′)/(2L′) clamped to [0, L − 1], t′ =
/// t + offset, in integers. Throws pev::error when row t + offset is outside the table.
struct learned_source {
  std::int64_t i0 = 0, i1 = 0, rem = 0, den = 1;
};
learned_source learned_source_of(const spec::learned& s, std::int64_t t);

}  // namespace pev::ref
