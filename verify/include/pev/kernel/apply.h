#pragma once
// RoPE application: rotate q [T, Hq, D] and k [T, Hk, D] (GQA: Hq ≠ Hk) by a cos/sin table, in
// place or out of place, for both layouts and partial rotary (dims ≥ rotary_dim are copied
// bit-exactly), with an arbitrary table row per token. The table dtype TT is independent of the q/k
// dtype TQ.
//
// Arithmetic: the rotation runs in fp32 (x0·c − x1·s, x0·s + x1·c, no FMA), rounded once to TQ — as
// vLLM, FlashAttention and the Meta reference do. Contract: per element, |ŷ − y| ≤ (|x0| +
// |x1|)·ε_cs + γ2·(|x0·c| + |x1·s|) + ½ ulp_TQ(y), with ε_cs the table's error (its contract) and
// γ2 = 2u/(1 − 2u).
//
// Precisely, the store term is ½ ulp_TQ(|y| + ε) with ε the sum of the other terms (and + 2^−148
// for gradual underflow in fp32): it differs from ½ ulp_TQ(y) only when y lies within ε below a
// power of two (tests/kernel_apply derives and enforces this form). The rotation needs the default
// floating-point environment (round to nearest; no FTZ/DAZ). Implementation: vectorised for the
// x86-64 baseline and, chosen at run time, for AVX2 + F16C; every path gives the same bits (the
// environment variable PEV_APPLY_ISA=baseline forces the baseline path, for comparison).

#include <cstdint>
#include <span>

#include "pev/scalar/traits.h"
#include "pev/spec/spec.h"

namespace pev::kernel {

/// A cos/sin table of `rows` rows × `pairs` columns each (row-major), as rope_kernel::table writes
/// it.
template <class TT>
struct rope_table_view {
  std::span<const TT> cos;
  std::span<const TT> sin;
  std::int64_t rows = 0;
  std::int64_t pairs = 0;
};

/// Heads of one tensor [tokens, heads, head_dim] (contiguous, row-major).
template <class TQ>
struct heads_view {
  std::span<TQ> data;
  std::int64_t tokens = 0;
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
};

/// Rotates `in` into `out` (which may alias `in` exactly, for in-place use): token t uses table row
/// rows[t]. Throws pev::error on shape mismatches or a row outside the table.
template <class TQ, class TT>
void rope_apply(const spec::rope& s, const rope_table_view<TT>& table,
                std::span<const std::int64_t> rows, heads_view<const TQ> in, heads_view<TQ> out);

/// Convenience: rotates q and k in place.
template <class TQ, class TT>
void rope_apply_qk(const spec::rope& s, const rope_table_view<TT>& table,
                   std::span<const std::int64_t> rows, heads_view<TQ> q, heads_view<TQ> k);

// Instantiated for TQ, TT ∈ {float, half, bfloat16} (verify/src/kernel/apply_<TQ>.cpp).
#define PEV_KERNEL_APPLY_EXTERN(TQ, TT)                                                        \
  extern template void rope_apply<TQ, TT>(const spec::rope&, const rope_table_view<TT>&,       \
                                          std::span<const std::int64_t>, heads_view<const TQ>, \
                                          heads_view<TQ>);                                     \
  extern template void rope_apply_qk<TQ, TT>(const spec::rope&, const rope_table_view<TT>&,    \
                                             std::span<const std::int64_t>, heads_view<TQ>,    \
                                             heads_view<TQ>);
PEV_KERNEL_APPLY_EXTERN(float, float)
PEV_KERNEL_APPLY_EXTERN(float, half)
PEV_KERNEL_APPLY_EXTERN(float, bfloat16)
PEV_KERNEL_APPLY_EXTERN(half, float)
PEV_KERNEL_APPLY_EXTERN(half, half)
PEV_KERNEL_APPLY_EXTERN(half, bfloat16)
PEV_KERNEL_APPLY_EXTERN(bfloat16, float)
PEV_KERNEL_APPLY_EXTERN(bfloat16, half)
PEV_KERNEL_APPLY_EXTERN(bfloat16, bfloat16)
#undef PEV_KERNEL_APPLY_EXTERN

}  // namespace pev::kernel
