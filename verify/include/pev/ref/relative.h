#pragma once
// Relative-position encodings (docs/encodings.md §3): ALiBi slopes and bias, T5 buckets, Shaw
// clipping.

#include <cstdint>
#include <vector>

#include "pev/core/real.h"
#include "pev/ref/recipe.h"
#include "pev/spec/spec.h"

namespace pev::ref {

/// ALiBi slopes m_h, h = 1 … H (index 0 holds m_1). Powers of two: 2^(−b·h/H); otherwise, with
/// P = 2^⌊log2 H⌋, the P-rule slopes then the odd entries of the 2P rule (b = max_bias).
std::vector<real> alibi_slopes(const spec::alibi& s, const recipe& r = exact_recipe());
/// bias(h, i, j) = m_h·(j − i) for query position i and key position j.
real alibi_bias(const real& slope, std::int64_t query, std::int64_t key);

/// T5 bucket of relative position r = key − query.
std::int64_t t5_bucket(const spec::t5& s, std::int64_t r, const recipe& r_ = exact_recipe());

/// Shaw clipped distance clip(r, −k, k).
std::int64_t shaw_clip(const spec::shaw& s, std::int64_t r);

}  // namespace pev::ref
