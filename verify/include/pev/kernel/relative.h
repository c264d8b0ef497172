#pragma once
// Relative-encoding kernels: ALiBi slopes and bias, T5 buckets, Shaw clipping.
//
// Contracts (docs/numerics.md §10.4–§10.6): ALiBi hf = BLOOM's fp32 pow of an fp32 base (within
// powf's 0.82 ulp of the exact slope when 8/P is an integer, several fp32 ulps otherwise: see the
// precise form below; the bias m·(j − i) adds one fp32 rounding); accurate = the exact slope (and
// bias) rounded once; table-* = the hf value rounded to the storage type. T5 hf evaluates the log
// branch in fp32; T5 accurate is exact (integer thresholds precomputed from the reference); both
// are checked against the exact buckets. `ggml` has no relative-encoding pipeline: pev::error.
//
// Precise form of the ALiBi hf bound (tests/kernel/test_contracts.cpp): the fp32 base
// b̂ = fl(2^(−8/P)) is off by |η| ≤ 2^−24 relative unless 8/P is an integer, and powf(b̂, h)
// raises that to ≈ h·|η| plus powf's 0.82 ulp, so slopes of heads with non-integer exponents can
// be several fp32 ulps from the exact slope (measured: 6 ulps at H = 48). T5 `table-*` evaluate
// the hf buckets (integers have no storage rounding). t5_buckets(accurate) settles distances on
// an exact integer boundary (e.g. n = 2048 for 32 causal buckets, max_distance 4096) in integer
// arithmetic.

#include <cstdint>
#include <span>

#include "pev/kernel/strategy.h"
#include "pev/scalar/traits.h"
#include "pev/spec/spec.h"

namespace pev::kernel {

/// Slopes m_1 … m_H.
template <class T>
void alibi_slopes(const spec::alibi& s, strategy st, std::span<T> out);

/// bias[h, a, b] = m_h·(keys[b] − queries[a]); out is [H, queries.size(), keys.size()].
template <class T>
void alibi_bias(const spec::alibi& s, strategy st, std::span<const std::int64_t> queries,
                std::span<const std::int64_t> keys, std::span<T> out);

/// T5 bucket of each relative distance r = key − query.
void t5_buckets(const spec::t5& s, strategy st, std::span<const std::int64_t> distances,
                std::span<std::int64_t> out);

/// Shaw clipped distance of each relative distance.
void shaw_clip(const spec::shaw& s, std::span<const std::int64_t> distances,
               std::span<std::int64_t> out);

extern template void alibi_slopes<float>(const spec::alibi&, strategy, std::span<float>);
extern template void alibi_slopes<half>(const spec::alibi&, strategy, std::span<half>);
extern template void alibi_slopes<bfloat16>(const spec::alibi&, strategy, std::span<bfloat16>);
extern template void alibi_bias<float>(const spec::alibi&, strategy, std::span<const std::int64_t>,
                                       std::span<const std::int64_t>, std::span<float>);
extern template void alibi_bias<half>(const spec::alibi&, strategy, std::span<const std::int64_t>,
                                      std::span<const std::int64_t>, std::span<half>);
extern template void alibi_bias<bfloat16>(const spec::alibi&, strategy,
                                          std::span<const std::int64_t>,
                                          std::span<const std::int64_t>, std::span<bfloat16>);

}  // namespace pev::kernel
