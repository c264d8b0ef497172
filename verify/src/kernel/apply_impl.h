#pragma once
// Implementation of pev::kernel::rope_apply (internal; included by apply_<TQ>.cpp, one translation
// unit per q/k dtype, and by the tests).
//
// Work is organised per token: the table row is converted to float once (fp16/bf16 tables) and
// shared by every head of q and k. A float head is rotated by one loop over its pairs. A bf16 head
// is rotated on 32-bit words holding two bf16 values (widening and rounding are then plain integer
// operations on whole SIMD lanes, no shuffles). An fp16 head is widened into a float scratch row,
// rotated there by the float loop and narrowed back (three contiguous loops vectorise far better
// than one that converts pairs in place). Every loop is plain C++ that GCC vectorises at -O3 for
// the x86-64 baseline (SSE2); the whole per-call driver is compiled a second time for AVX2 + F16C
// (fp16 conversions by vcvtph2ps/vcvtps2ph, which round like pev) and chosen at run time by CPU
// detection (apply_dispatch.cpp).
//
// Float in-place and out-of-place calls use separate loops whose pointers are __restrict-qualified
// and really disjoint: in place, the two halves of a NeoX head (or the whole interleaved head) are
// read and written through one pointer each, so no runtime alias check can send a loop down its
// scalar path.
//
// Arithmetic (the contract in apply.h): x0·c − x1·s and x0·s + x1·c in float with
// -ffp-contract=off (one rounding per product and one per sum, no FMA), then one rounding to TQ.
// Every code path gives the same bits.

#include <bit>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "apply_convert.h"
#include "isa.h"
#include "pev/core/error.h"
#include "pev/kernel/apply.h"
#include "pev/scalar/traits.h"

#define PEV_APPLY_X86 PEV_KERNEL_X86
#if PEV_APPLY_X86
#include <immintrin.h>
#endif

#define PEV_APPLY_INLINE [[gnu::always_inline]] inline

namespace pev::kernel::detail {

// --- Element access ---

// The encoding type of T (float for float) and float conversions of one element.
template <class T>
struct codec;

template <>
struct codec<float> {
  using storage = float;
  PEV_APPLY_INLINE static float load(float v) { return v; }
};

template <>
struct codec<half> {
  using storage = std::uint16_t;
  PEV_APPLY_INLINE static float load(std::uint16_t b) { return half_bits_to_float(b); }
  PEV_APPLY_INLINE static std::uint16_t store(float v) { return float_to_half_bits(v); }
};

template <>
struct codec<bfloat16> {
  using storage = std::uint16_t;
  PEV_APPLY_INLINE static float load(std::uint16_t b) { return bf16_bits_to_float(b); }
  PEV_APPLY_INLINE static std::uint16_t store(float v) { return float_to_bf16_bits(v); }
};

// half and bfloat16 are standard-layout structs whose only member is the uint16_t encoding, so a
// pointer to one is pointer-interconvertible with a pointer to its encoding.
template <class T>
typename codec<T>::storage* raw(T* p) {
  return reinterpret_cast<typename codec<T>::storage*>(p);
}
template <class T>
const typename codec<T>::storage* raw(const T* p) {
  return reinterpret_cast<const typename codec<T>::storage*>(p);
}

// --- Float pair loops (n pairs; c, s are the row's n cosines and sines) ---

// NeoX in place: pair i = (a[i], b[i]), a and b the two halves of the rotary slice.
PEV_APPLY_INLINE void neox_in_place(float* __restrict a, float* __restrict b,
                                    const float* __restrict c, const float* __restrict s,
                                    std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float x0 = a[i];
    const float x1 = b[i];
    a[i] = x0 * c[i] - x1 * s[i];
    b[i] = x0 * s[i] + x1 * c[i];
  }
}

// NeoX out of place.
PEV_APPLY_INLINE void neox_copy(const float* __restrict a, const float* __restrict b,
                                float* __restrict ya, float* __restrict yb,
                                const float* __restrict c, const float* __restrict s,
                                std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float x0 = a[i];
    const float x1 = b[i];
    ya[i] = x0 * c[i] - x1 * s[i];
    yb[i] = x0 * s[i] + x1 * c[i];
  }
}

// Interleaved in place: pair i = (p[2i], p[2i+1]).
PEV_APPLY_INLINE void interleaved_in_place(float* __restrict p, const float* __restrict c,
                                           const float* __restrict s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float x0 = p[2 * i];
    const float x1 = p[2 * i + 1];
    p[2 * i] = x0 * c[i] - x1 * s[i];
    p[2 * i + 1] = x0 * s[i] + x1 * c[i];
  }
}

// Interleaved out of place.
PEV_APPLY_INLINE void interleaved_copy(const float* __restrict p, float* __restrict y,
                                       const float* __restrict c, const float* __restrict s,
                                       std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float x0 = p[2 * i];
    const float x1 = p[2 * i + 1];
    y[2 * i] = x0 * c[i] - x1 * s[i];
    y[2 * i + 1] = x0 * s[i] + x1 * c[i];
  }
}

// --- bf16 on 32-bit words ---
//
// An interleaved bf16 pair (x0, x1) is one little-endian 32-bit word with x0 in its low half and x1
// in its high half, and a bf16 encoding is the top half of the float's. So x0 = float(w << 16),
// x1 = float(w & 0xffff0000), and the rounded results pack back as (r0 >> 16) | (r1 & 0xffff0000):
// purely vertical SIMD, no shuffles, no scratch row.

// A 32-bit word at any 2-byte-aligned address, allowed to alias the uint16_t encodings.
using bf16_pair_word = std::uint32_t __attribute__((may_alias, aligned(2)));

// The float's encoding rounded so that its top half is float_to_bf16_bits(f).
PEV_APPLY_INLINE std::uint32_t bf16_rounded_word(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = x + 0x7fffu + ((x >> 16) & 1u);
  return select(mask_if((x & 0x7fffffffu) > 0x7f800000u), x | 0x00400000u, rounded);
}

PEV_APPLY_INLINE std::uint32_t bf16_rotate_pair(std::uint32_t w, float c, float s) {
  const float x0 = std::bit_cast<float>(w << 16);
  const float x1 = std::bit_cast<float>(w & 0xffff0000u);
  return (bf16_rounded_word(x0 * c - x1 * s) >> 16) |
         (bf16_rounded_word(x0 * s + x1 * c) & 0xffff0000u);
}

PEV_APPLY_INLINE void bf16_interleaved_in_place(bf16_pair_word* __restrict p,
                                                const float* __restrict c,
                                                const float* __restrict s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) p[i] = bf16_rotate_pair(p[i], c[i], s[i]);
}

PEV_APPLY_INLINE void bf16_interleaved_copy(const bf16_pair_word* __restrict p,
                                            bf16_pair_word* __restrict y, const float* __restrict c,
                                            const float* __restrict s, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = bf16_rotate_pair(p[i], c[i], s[i]);
}

// NeoX pairs (a[i], b[i]) two at a time: words A[j] = (a[2j], a[2j+1]) and B[j] = (b[2j], b[2j+1]),
// with the row split by parity (ce[j] = c[2j], co[j] = c[2j+1], likewise se, so) once per token.
struct bf16_parity_row {
  const float* ce;
  const float* co;
  const float* se;
  const float* so;
};

PEV_APPLY_INLINE void bf16_rotate_words(std::uint32_t wa, std::uint32_t wb, float ce, float co,
                                        float se, float so, std::uint32_t& ya, std::uint32_t& yb) {
  const float a0 = std::bit_cast<float>(wa << 16);
  const float a1 = std::bit_cast<float>(wa & 0xffff0000u);
  const float b0 = std::bit_cast<float>(wb << 16);
  const float b1 = std::bit_cast<float>(wb & 0xffff0000u);
  ya = (bf16_rounded_word(a0 * ce - b0 * se) >> 16) |
       (bf16_rounded_word(a1 * co - b1 * so) & 0xffff0000u);
  yb = (bf16_rounded_word(a0 * se + b0 * ce) >> 16) |
       (bf16_rounded_word(a1 * so + b1 * co) & 0xffff0000u);
}

PEV_APPLY_INLINE void bf16_neox_in_place(bf16_pair_word* __restrict a, bf16_pair_word* __restrict b,
                                         const bf16_parity_row& r, std::int64_t m) {
  const float* __restrict ce = r.ce;
  const float* __restrict co = r.co;
  const float* __restrict se = r.se;
  const float* __restrict so = r.so;
  for (std::int64_t j = 0; j < m; ++j) {
    std::uint32_t ya;
    std::uint32_t yb;
    bf16_rotate_words(a[j], b[j], ce[j], co[j], se[j], so[j], ya, yb);
    a[j] = ya;
    b[j] = yb;
  }
}

PEV_APPLY_INLINE void bf16_neox_copy(const bf16_pair_word* __restrict a,
                                     const bf16_pair_word* __restrict b,
                                     bf16_pair_word* __restrict ya, bf16_pair_word* __restrict yb,
                                     const bf16_parity_row& r, std::int64_t m) {
  const float* __restrict ce = r.ce;
  const float* __restrict co = r.co;
  const float* __restrict se = r.se;
  const float* __restrict so = r.so;
  for (std::int64_t j = 0; j < m; ++j) {
    std::uint32_t y0;
    std::uint32_t y1;
    bf16_rotate_words(a[j], b[j], ce[j], co[j], se[j], so[j], y0, y1);
    ya[j] = y0;
    yb[j] = y1;
  }
}

// --- 16-bit rows ↔ float ---

template <class T>
PEV_APPLY_INLINE void widen_generic(const T* __restrict src, float* __restrict dst,
                                    std::int64_t n) {
  const auto* bits = raw(src);
  for (std::int64_t i = 0; i < n; ++i) dst[i] = codec<T>::load(bits[i]);
}

template <class T>
PEV_APPLY_INLINE void narrow_generic(const float* __restrict src, T* __restrict dst,
                                     std::int64_t n) {
  auto* bits = raw(dst);
  for (std::int64_t i = 0; i < n; ++i) bits[i] = codec<T>::store(src[i]);
}

#if PEV_APPLY_X86
// fp16 by F16C, 8 values at a time. vcvtph2ps is exact except that it quiets a signalling NaN
// (the rotation's first product would quiet it anyway, so results do not change); vcvtps2ph with an
// explicit round-to-nearest-even immediate rounds like pev (subnormals, overflow to Inf, NaN
// quieted with the top payload bits). Both are checked bit for bit by tests/kernel_apply.
__attribute__((target("avx2,f16c"))) inline void widen_half_f16c(const half* __restrict src,
                                                                 float* __restrict dst,
                                                                 std::int64_t n) {
  const auto* bits = raw(src);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bits + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = half_bits_to_float(bits[i]);
}

__attribute__((target("avx2,f16c"))) inline void narrow_half_f16c(const float* __restrict src,
                                                                  half* __restrict dst,
                                                                  std::int64_t n) {
  auto* bits = raw(dst);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bits + i), h);
  }
  for (; i < n; ++i) bits[i] = float_to_half_bits(src[i]);
}
#endif

template <class T, isa I>
PEV_APPLY_INLINE void widen(const T* src, float* dst, std::int64_t n) {
#if PEV_APPLY_X86
  if constexpr (I == isa::avx2 && std::is_same_v<T, half>) {
    widen_half_f16c(src, dst, n);
    return;
  }
#endif
  widen_generic(src, dst, n);
}

template <class T, isa I>
PEV_APPLY_INLINE void narrow(const float* src, T* dst, std::int64_t n) {
#if PEV_APPLY_X86
  if constexpr (I == isa::avx2 && std::is_same_v<T, half>) {
    narrow_half_f16c(src, dst, n);
    return;
  }
#endif
  narrow_generic(src, dst, n);
}

// --- Driver ---

// One tensor [tokens, heads, head_dim] to rotate; in == out for in place.
template <class TQ>
struct job {
  const TQ* in;
  TQ* out;
  std::int64_t heads;
};

struct head_shape {
  std::int64_t pairs;     // rotary_dim / 2
  std::int64_t head_dim;  // elements per head; dims ≥ 2·pairs pass through
  bool neox;
};

// Rotates the float rotary slice x (2·pairs values) in place.
PEV_APPLY_INLINE void rotate_in_place(const head_shape& h, float* x, const float* c,
                                      const float* s) {
  if (h.neox) {
    neox_in_place(x, x + h.pairs, c, s, h.pairs);
  } else {
    interleaved_in_place(x, c, s, h.pairs);
  }
}

// A token's table row in float: c and s (pairs values each) and, for bf16 NeoX heads, the same
// split by parity.
struct row_view {
  const float* c;
  const float* s;
  bf16_parity_row parity;
};

// One head: in → out. `scratch` holds 2·pairs floats (fp16 q/k only).
template <class TQ, isa I>
PEV_APPLY_INLINE void rotate_head(const head_shape& h, const TQ* in, TQ* out, const row_view& r,
                                  float* scratch) {
  const std::int64_t n = h.pairs;
  const std::int64_t rot = 2 * n;
  if constexpr (std::is_same_v<TQ, float>) {
    if (in == out) {
      rotate_in_place(h, out, r.c, r.s);
      return;
    }
    if (h.neox) {
      neox_copy(in, in + n, out, out + n, r.c, r.s, n);
    } else {
      interleaved_copy(in, out, r.c, r.s, n);
    }
  } else if constexpr (std::is_same_v<TQ, bfloat16>) {
    const auto* x = raw(in);
    auto* y = raw(out);
    const auto* xw = reinterpret_cast<const bf16_pair_word*>(x);
    auto* yw = reinterpret_cast<bf16_pair_word*>(y);
    if (h.neox) {
      const auto* xbw = reinterpret_cast<const bf16_pair_word*>(x + n);
      auto* ybw = reinterpret_cast<bf16_pair_word*>(y + n);
      if (in == out) {
        bf16_neox_in_place(yw, ybw, r.parity, n / 2);
      } else {
        bf16_neox_copy(xw, xbw, yw, ybw, r.parity, n / 2);
      }
      if (n % 2 != 0) {
        // The last pair of an odd pair count, on its own (the loop above left it untouched).
        using C = codec<bfloat16>;
        const std::int64_t i = n - 1;
        const float x0 = C::load(x[i]);
        const float x1 = C::load(x[i + n]);
        y[i] = C::store(x0 * r.c[i] - x1 * r.s[i]);
        y[i + n] = C::store(x0 * r.s[i] + x1 * r.c[i]);
      }
    } else if (in == out) {
      bf16_interleaved_in_place(yw, r.c, r.s, n);
    } else {
      bf16_interleaved_copy(xw, yw, r.c, r.s, n);
    }
    if (in == out) return;  // pass-through dims are already in place
  } else {
    widen<TQ, I>(in, scratch, rot);
    rotate_in_place(h, scratch, r.c, r.s);
    narrow<TQ, I>(scratch, out, rot);
    if (in == out) return;  // pass-through dims are already in place
  }
  // Pass-through dims, bit for bit (NaN payloads included: no trip through float).
  if (h.head_dim > rot) {
    std::memcpy(out + rot, in + rot, static_cast<std::size_t>(h.head_dim - rot) * sizeof(TQ));
  }
}

// Scratch floats run_body needs: the widened row (2n), one fp16 head (2n), the parity split (2n).
inline std::size_t run_buffer_size(std::int64_t pairs) {
  return 6 * static_cast<std::size_t>(pairs);
}

template <class TQ, class TT, isa I>
PEV_APPLY_INLINE void run_body(const head_shape& h, const rope_table_view<TT>& table,
                               std::span<const std::int64_t> rows, std::span<const job<TQ>> jobs,
                               float* buffer) {
  const std::int64_t n = h.pairs;
  const std::int64_t m = n / 2;
  const std::int64_t d = h.head_dim;
  float* const row = buffer;              // the row's cos then sin (16-bit tables)
  float* const scratch = buffer + 2 * n;  // one head's rotary slice (fp16 q/k)
  float* const parity = buffer + 4 * n;   // ce, co, se, so (bf16 NeoX)
  const bool split = std::is_same_v<TQ, bfloat16> && h.neox;
  for (std::size_t t = 0; t < rows.size(); ++t) {
    const std::int64_t offset = rows[t] * n;
    row_view r{};
    if constexpr (std::is_same_v<TT, float>) {
      r.c = table.cos.data() + offset;
      r.s = table.sin.data() + offset;
    } else {
      widen<TT, I>(table.cos.data() + offset, row, n);
      widen<TT, I>(table.sin.data() + offset, row + n, n);
      r.c = row;
      r.s = row + n;
    }
    if (split) {
      float* __restrict ce = parity;
      float* __restrict co = parity + m;
      float* __restrict se = parity + 2 * m;
      float* __restrict so = parity + 3 * m;
      const float* __restrict c = r.c;
      const float* __restrict s = r.s;
      for (std::int64_t j = 0; j < m; ++j) {
        ce[j] = c[2 * j];
        co[j] = c[2 * j + 1];
        se[j] = s[2 * j];
        so[j] = s[2 * j + 1];
      }
      r.parity = {ce, co, se, so};
    }
    for (const job<TQ>& j : jobs) {
      const std::int64_t base = static_cast<std::int64_t>(t) * j.heads * d;
      for (std::int64_t k = 0; k < j.heads; ++k) {
        rotate_head<TQ, I>(h, j.in + base + k * d, j.out + base + k * d, r, scratch);
      }
    }
  }
}

template <class TQ, class TT>
void run_baseline(const head_shape& h, const rope_table_view<TT>& table,
                  std::span<const std::int64_t> rows, std::span<const job<TQ>> jobs,
                  float* buffer) {
  run_body<TQ, TT, isa::baseline>(h, table, rows, jobs, buffer);
}

#if PEV_APPLY_X86
template <class TQ, class TT>
__attribute__((target("avx2,f16c"))) void run_avx2(const head_shape& h,
                                                   const rope_table_view<TT>& table,
                                                   std::span<const std::int64_t> rows,
                                                   std::span<const job<TQ>> jobs, float* buffer) {
  run_body<TQ, TT, isa::avx2>(h, table, rows, jobs, buffer);
}
#endif

template <class TQ, class TT>
void run(const spec::rope& s, const rope_table_view<TT>& table, std::span<const std::int64_t> rows,
         std::span<const job<TQ>> jobs) {
  const head_shape h{s.pairs(), s.head_dim, s.layout == spec::rope_layout::neox};
  std::vector<float> buffer(run_buffer_size(h.pairs));
#if PEV_APPLY_X86
  if (active_isa() == isa::avx2) {
    run_avx2<TQ, TT>(h, table, rows, jobs, buffer.data());
    return;
  }
#endif
  run_baseline<TQ, TT>(h, table, rows, jobs, buffer.data());
}

// --- Validation (apply_dispatch.cpp) ---

void check_spec(const spec::rope& s);
// table.pairs, table.rows and the spans' sizes; every rows[t] in [0, table.rows).
void check_table(const spec::rope& s, std::int64_t table_rows, std::int64_t table_pairs,
                 std::size_t cos_size, std::size_t sin_size, std::span<const std::int64_t> rows);
// A tensor's shape against the spec and the token count; `name` is "q", "k", "in" or "out".
void check_heads(const spec::rope& s, std::int64_t tokens, std::int64_t heads,
                 std::int64_t head_dim, std::size_t size, std::int64_t expected_tokens,
                 const char* name);
// True if the byte ranges [a, a + a_bytes) and [b, b + b_bytes) overlap (empty ranges never do).
bool overlaps(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes);
[[noreturn]] void fail(const std::string& message);

template <class T>
void check_heads(const spec::rope& s, const heads_view<T>& v, std::int64_t tokens,
                 const char* name) {
  check_heads(s, v.tokens, v.heads, v.head_dim, v.data.size(), tokens, name);
}

template <class TT>
void check_table(const spec::rope& s, const rope_table_view<TT>& t,
                 std::span<const std::int64_t> rows) {
  check_table(s, t.rows, t.pairs, t.cos.size(), t.sin.size(), rows);
}

}  // namespace pev::kernel::detail

namespace pev::kernel {

template <class TQ, class TT>
void rope_apply(const spec::rope& s, const rope_table_view<TT>& table,
                std::span<const std::int64_t> rows, heads_view<const TQ> in, heads_view<TQ> out) {
  detail::check_spec(s);
  const auto tokens = static_cast<std::int64_t>(rows.size());
  detail::check_heads(s, in, tokens, "in");
  detail::check_heads(s, out, tokens, "out");
  if (out.heads != in.heads) {
    detail::fail("rope_apply: out has " + std::to_string(out.heads) + " heads, in has " +
                 std::to_string(in.heads));
  }
  const bool in_place =
      static_cast<const void*>(out.data.data()) == static_cast<const void*>(in.data.data());
  if (!in_place && detail::overlaps(in.data.data(), in.data.size_bytes(), out.data.data(),
                                    out.data.size_bytes())) {
    detail::fail(
        "rope_apply: in and out overlap without being the same buffer (in place needs out.data "
        "== in.data)");
  }
  detail::check_table(s, table, rows);
  const detail::job<TQ> jobs[] = {{in.data.data(), out.data.data(), in.heads}};
  detail::run<TQ, TT>(s, table, rows, jobs);
}

template <class TQ, class TT>
void rope_apply_qk(const spec::rope& s, const rope_table_view<TT>& table,
                   std::span<const std::int64_t> rows, heads_view<TQ> q, heads_view<TQ> k) {
  detail::check_spec(s);
  const auto tokens = static_cast<std::int64_t>(rows.size());
  detail::check_heads(s, q, tokens, "q");
  detail::check_heads(s, k, tokens, "k");
  if (detail::overlaps(q.data.data(), q.data.size_bytes(), k.data.data(), k.data.size_bytes())) {
    detail::fail("rope_apply: q and k overlap");
  }
  detail::check_table(s, table, rows);
  const detail::job<TQ> jobs[] = {{q.data.data(), q.data.data(), q.heads},
                                  {k.data.data(), k.data.data(), k.heads}};
  detail::run<TQ, TT>(s, table, rows, jobs);
}

}  // namespace pev::kernel

// Explicit instantiations of rope_apply and rope_apply_qk for one q/k dtype and every table dtype.
#define PEV_KERNEL_APPLY_INSTANTIATE_ONE(TQ, TT)                                        \
  template void rope_apply<TQ, TT>(const spec::rope&, const rope_table_view<TT>&,       \
                                   std::span<const std::int64_t>, heads_view<const TQ>, \
                                   heads_view<TQ>);                                     \
  template void rope_apply_qk<TQ, TT>(const spec::rope&, const rope_table_view<TT>&,    \
                                      std::span<const std::int64_t>, heads_view<TQ>,    \
                                      heads_view<TQ>);
#define PEV_KERNEL_APPLY_INSTANTIATE(TQ)            \
  PEV_KERNEL_APPLY_INSTANTIATE_ONE(TQ, float)       \
  PEV_KERNEL_APPLY_INSTANTIATE_ONE(TQ, ::pev::half) \
  PEV_KERNEL_APPLY_INSTANTIATE_ONE(TQ, ::pev::bfloat16)
