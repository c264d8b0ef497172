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
/// table to target_positions rows. Throws pev::error when t is outside the table.
std::vector<real> learned_row(const spec::learned& s, std::int64_t t,
                              const recipe& r = exact_recipe());

}  // namespace pev::ref
