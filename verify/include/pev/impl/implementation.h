#pragma once
// pev::impl::implementation — the one interface for anything under test (docs/design.md §3.8):
// pev's built-in kernels (make_builtin), the mutant catalogue (impl/mutants.h) and live
// implementations (a dlopen'ed C plugin or a subprocess, impl/live.h); certification reads file
// dumps directly. Each output an implementation can produce is a virtual method; an implementation
// that cannot produce one says so through supports() and throws pev::error if it is asked anyway.
// Properties (pev::prop) and certification see nothing else.
//
// Conventions: positions and distances are int64 (negative values allowed where the encoding
// defines them); tensors are row-major; `seq_len` is the sequence length that selects the
// frequencies of stateful rope types (dynamic, longrope; none = the initial state, as
// transformers at construction) and is ignored by static ones.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "pev/kernel/apply.h"
#include "pev/kernel/strategy.h"
#include "pev/scalar/dtype.h"
#include "pev/scalar/traits.h"
#include "pev/spec/spec.h"

namespace pev::impl {

/// What an implementation can produce.
enum class output {
  inv_freq,          // RoPE per-pair frequencies (fp32)
  attention_factor,  // RoPE magnitude m
  rope_table,        // m·cos, m·sin at positions
  rope_rotate,       // rotated q/k [T, H, D]
  sinusoidal_pe,     // PE rows at positions
  alibi_slopes,      // m_1 … m_H
  alibi_bias,        // [H, Q, K]
  t5_buckets,        // bucket ids of relative distances
};
const char* to_string(output o);

/// Output element types are pev::dtype (pev/scalar/dtype.h): fp32, fp16 or bf16.
using pev::dtype;

class implementation {
 public:
  virtual ~implementation() = default;

  /// A stable, human-readable name ("hf", "mutant:sin-cos-swapped/hf", a file name, …).
  virtual std::string name() const = 0;
  /// The encoding the implementation claims to implement.
  virtual const spec::encoding& claimed_spec() const = 0;
  /// The built-in strategy whose accuracy contract (pev/impl/contract.h) the implementation claims:
  /// the tolerance properties hold it to.
  virtual kernel::strategy claimed_accuracy() const = 0;
  /// Whether `what` can be produced in element type `t`.
  virtual bool supports(output what, dtype t) const = 0;

  // RoPE -----------------------------------------------------------------------------------------
  virtual std::vector<float> inv_freq(std::optional<std::int64_t> seq_len) const;
  virtual double attention_factor(std::optional<std::int64_t> seq_len) const;
  /// cos and sin are [positions.size(), pairs] row-major (already multiplied by m).
  virtual void rope_table(std::span<const std::int64_t> positions,
                          std::optional<std::int64_t> seq_len, std::span<float> cos,
                          std::span<float> sin) const;
  virtual void rope_table(std::span<const std::int64_t> positions,
                          std::optional<std::int64_t> seq_len, std::span<half> cos,
                          std::span<half> sin) const;
  virtual void rope_table(std::span<const std::int64_t> positions,
                          std::optional<std::int64_t> seq_len, std::span<bfloat16> cos,
                          std::span<bfloat16> sin) const;
  /// Rotates `in` [T, H, head_dim] into `out`: token t at positions[t]. `out` may alias `in`
  /// exactly (in place); otherwise `in` must be left unchanged.
  virtual void rope_rotate(std::span<const std::int64_t> positions,
                           std::optional<std::int64_t> seq_len, kernel::heads_view<const float> in,
                           kernel::heads_view<float> out) const;
  virtual void rope_rotate(std::span<const std::int64_t> positions,
                           std::optional<std::int64_t> seq_len, kernel::heads_view<const half> in,
                           kernel::heads_view<half> out) const;
  virtual void rope_rotate(std::span<const std::int64_t> positions,
                           std::optional<std::int64_t> seq_len,
                           kernel::heads_view<const bfloat16> in,
                           kernel::heads_view<bfloat16> out) const;

  // MRoPE (docs/encodings.md §4.6) ---------------------------------------------------------------
  // positions are [S, T] row-major, S = the claimed spec's streams(); pair i of token t is at
  // position positions[s(i)·T + t] with s = stream_map(). Both compose the 1-D outputs above: one
  // call per stream at that stream's positions, pair i (its dims, for a rotation) taken from its
  // stream's result, so every value is the implementation's own 1-D value (a text token, all
  // streams equal, gives the 1-D result bit for bit).
  /// The stream of every pair: spec::mrope_streams of the claimed spec (a mutant may mistake it).
  virtual std::vector<std::int64_t> stream_map() const;
  /// The spec whose layout and rotary dims rope_rotate pairs the dims by (the claimed one; a
  /// mutant may mistake it): rope_rotate_streams takes each dim from its pair's stream.
  virtual spec::rope rotation_spec() const;
  /// cos and sin are [T, pairs].
  template <class T>
  void rope_table_streams(std::span<const std::int64_t> positions,
                          std::optional<std::int64_t> seq_len, std::span<T> cos,
                          std::span<T> sin) const;
  /// Rotates `in` [T, H, head_dim] into `out` (which may alias `in` exactly).
  template <class T>
  void rope_rotate_streams(std::span<const std::int64_t> positions,
                           std::optional<std::int64_t> seq_len, kernel::heads_view<const T> in,
                           kernel::heads_view<T> out) const;

  // Sinusoidal -----------------------------------------------------------------------------------
  /// out is [positions.size(), d_model] in the spec's layout.
  virtual void sinusoidal_pe(std::span<const std::int64_t> positions, std::span<float> out) const;
  virtual void sinusoidal_pe(std::span<const std::int64_t> positions, std::span<half> out) const;
  virtual void sinusoidal_pe(std::span<const std::int64_t> positions,
                             std::span<bfloat16> out) const;

  // Relative -------------------------------------------------------------------------------------
  virtual void alibi_slopes(std::span<float> out) const;
  virtual void alibi_slopes(std::span<half> out) const;
  virtual void alibi_slopes(std::span<bfloat16> out) const;
  /// out is [H, queries.size(), keys.size()]: m_h·(key − query).
  virtual void alibi_bias(std::span<const std::int64_t> queries, std::span<const std::int64_t> keys,
                          std::span<float> out) const;
  virtual void alibi_bias(std::span<const std::int64_t> queries, std::span<const std::int64_t> keys,
                          std::span<half> out) const;
  virtual void alibi_bias(std::span<const std::int64_t> queries, std::span<const std::int64_t> keys,
                          std::span<bfloat16> out) const;
  /// Bucket of each relative distance r = key − query.
  virtual void t5_buckets(std::span<const std::int64_t> distances,
                          std::span<std::int64_t> out) const;

 protected:
  /// Throws pev::error "<name>: <what> is not supported".
  [[noreturn]] void unsupported(output what) const;
};

namespace detail {
/// The number of streams of `impl`'s claimed spec and T = positions / streams; throws pev::error
/// when the count does not divide.
std::int64_t stream_tokens(const implementation& impl, std::size_t positions,
                           std::int64_t& streams);
}  // namespace detail

template <class T>
void implementation::rope_table_streams(std::span<const std::int64_t> positions,
                                        std::optional<std::int64_t> seq_len, std::span<T> cos,
                                        std::span<T> sin) const {
  std::int64_t S = 1;
  const std::int64_t n = detail::stream_tokens(*this, positions.size(), S);
  const std::vector<std::int64_t> map = stream_map();
  const std::size_t rows = static_cast<std::size_t>(n) * map.size();
  std::vector<T> c(rows * static_cast<std::size_t>(S)), s(c.size());
  for (std::int64_t k = 0; k < S; ++k) {
    const auto u = static_cast<std::size_t>(k);
    rope_table(positions.subspan(u * static_cast<std::size_t>(n), static_cast<std::size_t>(n)),
               seq_len, std::span<T>(c).subspan(u * rows, rows),
               std::span<T>(s).subspan(u * rows, rows));
  }
  spec::select_streams<T>(map, n, c, cos);
  spec::select_streams<T>(map, n, s, sin);
}

template <class T>
void implementation::rope_rotate_streams(std::span<const std::int64_t> positions,
                                         std::optional<std::int64_t> seq_len,
                                         kernel::heads_view<const T> in,
                                         kernel::heads_view<T> out) const {
  std::int64_t S = 1;
  const std::int64_t n = detail::stream_tokens(*this, positions.size(), S);
  const std::vector<std::int64_t> map = stream_map();
  const std::vector<std::int64_t> pair = spec::dim_pairs(rotation_spec());
  const std::size_t size = in.data.size();
  std::vector<T> all(size * static_cast<std::size_t>(S));
  for (std::int64_t k = 0; k < S; ++k) {
    const auto u = static_cast<std::size_t>(k);
    rope_rotate(positions.subspan(u * static_cast<std::size_t>(n), static_cast<std::size_t>(n)),
                seq_len, in,
                kernel::heads_view<T>{std::span<T>(all).subspan(u * size, size), in.tokens,
                                      in.heads, in.head_dim});
  }
  // Dim j of every head comes from its pair's stream; pass-through dims (and pairs a mistaken
  // rotation adds beyond the spec's) from stream 0.
  const auto D = static_cast<std::size_t>(in.head_dim);
  for (std::size_t e = 0; e < size && D > 0; ++e) {
    const auto i = static_cast<std::size_t>(pair[e % D]);
    const std::size_t k = i < map.size() ? static_cast<std::size_t>(map[i]) : 0;
    out.data[e] = all[k * size + e];
  }
}

/// Implements the per-dtype overloads of `implementation` by forwarding to the member templates
/// of Derived (CRTP): table_t, rotate_t, pe_t, slopes_t and bias_t, each templated on the element
/// type. Adapters written once for all three dtypes derive from it.
template <class Derived>
class typed_implementation : public implementation {
 public:
#define PEV_IMPL_TYPED(T)                                                                      \
  void rope_table(std::span<const std::int64_t> p, std::optional<std::int64_t> seq,            \
                  std::span<T> c, std::span<T> s) const override {                             \
    self().template table_t<T>(p, seq, c, s);                                                  \
  }                                                                                            \
  void rope_rotate(std::span<const std::int64_t> p, std::optional<std::int64_t> seq,           \
                   kernel::heads_view<const T> in, kernel::heads_view<T> out) const override { \
    self().template rotate_t<T>(p, seq, in, out);                                              \
  }                                                                                            \
  void sinusoidal_pe(std::span<const std::int64_t> p, std::span<T> out) const override {       \
    self().template pe_t<T>(p, out);                                                           \
  }                                                                                            \
  void alibi_slopes(std::span<T> out) const override { self().template slopes_t<T>(out); }     \
  void alibi_bias(std::span<const std::int64_t> q, std::span<const std::int64_t> k,            \
                  std::span<T> out) const override {                                           \
    self().template bias_t<T>(q, k, out);                                                      \
  }
  PEV_IMPL_TYPED(float)
  PEV_IMPL_TYPED(half)
  PEV_IMPL_TYPED(bfloat16)
#undef PEV_IMPL_TYPED

 private:
  const Derived& self() const { return static_cast<const Derived&>(*this); }
};

/// The plain RoPE spec (rope_type default) with the same head_dim, rotary dims, base and layout.
spec::rope plain_rope(const spec::rope& s);

/// The built-in kernel of strategy `st` for encoding `e` as an implementation (an adapter over
/// pev::kernel). Throws pev::error if the strategy has no pipeline for the family (ggml: RoPE
/// only; learned and Shaw tables are not adapted yet).
std::unique_ptr<implementation> make_builtin(const spec::encoding& e, kernel::strategy st);
/// Whether make_builtin accepts the family of `e` for `st`.
bool builtin_supports(const spec::encoding& e, kernel::strategy st);

}  // namespace pev::impl
