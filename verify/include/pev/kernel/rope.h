#pragma once
// RoPE production kernels: per-pair frequencies, attention factor and cos/sin tables for every
// rope_type and strategy, with float, half and bfloat16 outputs.
//
// A rope_kernel is planned once per (spec, strategy, sequence length) — frequencies and constants
// are computed at construction — and then evaluates rows for any 64-bit positions, in any order.
//
// clang-format off
// Contracts (enforced by tests/kernel's accuracy-contract table with the bounds of
// pev/impl/contract.h; θ = p·θ_i, u = 2^−24; docs/numerics.md §8.11):
//   hf, table-*  |ĉ − c| ≤ m·(p·θ_i·(ε_i + u) + e_trig·u) + ½ ulp of the storage type, where ε_i
//                is the analytic relative error bound of the fp32 frequency (exponent rounding,
//                powf, reciprocal, scaling ops) and e_trig the libm bound; faithful to the `hf`
//                recipe reference up to e_trig·u + the libm's powf error propagated by p. Valid
//                for p < 2^24 (fp32 positions round beyond; the bound then adds
//                θ_i·|p − fl(p)|). This closed form is the first-order reading of the enforced
//                model (docs/numerics.md §8.2–§8.6).
//   ggml         the `ggml` recipe reference up to the libm's error; vs exact, to first order
//                for the plain recurrence, the envelope m·(p·d/(2e·ln b)·(|δ| + u) + 2u). The
//                enforced bound replays the recurrence per pair, with freq_scale, per-pair
//                factors, YaRN and fl(p) (impl::ggml_model; docs/numerics.md §8.7, §8.8).
//   accurate     |ĉ − c| ≤ 1 ulp of the output type for every int64 position p < 2^53,
//                correctly rounded except with probability ~2^−26 per value.
// clang-format on

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "pev/kernel/strategy.h"
#include "pev/scalar/traits.h"
#include "pev/spec/spec.h"

namespace pev::kernel {

/// YaRN's correction range as transformers computes it (find_correction_range, in Python
/// doubles): cdim(β) = d·ln(Lo/(2π·β))/(2·ln b) with d = rotary_dim; low = cdim(β_fast), high =
/// cdim(β_slow), floored and ceiled when `truncate`, then clamped to [0, d − 1] (d − 1, not
/// d/2 − 1: the last pairs need not be fully interpolated). The one place this double arithmetic
/// is written: the hf kernels, their contract and the mutants all use it.
struct correction_range {
  double low = 0;
  double high = 0;
};
correction_range hf_yarn_correction_range(const spec::rope& s);

/// How a ggml build rounds YaRN's angle mix θ = interp·(1 − mix) + extrap·mix (ggml-cpu's
/// rope_yarn): each product rounded, then the sum (-ffp-contract=off), or one product fused into
/// the sum by the compiler's FMA contraction (the default on FMA targets: GCC's and Clang's x86
/// builds with GGML_NATIVE fuse interp·(1 − mix)). One build rounds every value the same way
/// (docs/numerics.md §8.7).
enum class ggml_mix {
  separate,      // fl(fl(interp·(1 − mix)) + fl(extrap·mix))
  fused_interp,  // fma(interp, 1 − mix, fl(extrap·mix))
  fused_extrap,  // fma(extrap, mix, fl(interp·(1 − mix)))
};
inline constexpr ggml_mix kGgmlMixes[] = {ggml_mix::separate, ggml_mix::fused_interp,
                                          ggml_mix::fused_extrap};
/// How the certificate names a mix ("the angle mix fused (FMA): ...").
const char* describe(ggml_mix m);

/// The ggml recipe's fp32 angles (llama.cpp's ggml_rope_cache_init: the θ recurrence from
/// float(p), per-pair factors, freq_scale, the YaRN mix) and its magnitude factor, for a spec; the
/// recurrence's ratio theta_scale = powf(base, −2/n_dims) can be replaced, to replay the angles of
/// an implementation whose powf rounds differently (certify measures its library this way).
class ggml_angle_plan {
 public:
  ggml_angle_plan(const spec::rope& s, std::optional<std::int64_t> seq_len = std::nullopt);
  ~ggml_angle_plan();
  ggml_angle_plan(ggml_angle_plan&&) noexcept;
  float theta_scale() const;
  void set_theta_scale(float ts);
  float mscale() const;
  /// Whether the YaRN angle mix takes part (ext_factor ≠ 0): only then does mix() matter.
  bool mixes() const;
  ggml_mix mix() const;
  /// The rounding of the angle mix the angles follow (default separate: no FMA).
  void set_mix(ggml_mix m);
  /// Pairs that rotate (the NoPE tail of proportional has angle 0).
  std::int64_t rotating() const;
  /// The angle of every rotating pair at position p: out has rotating() entries.
  void angles(std::int64_t p, std::span<float> out) const;

 private:
  struct params;
  std::unique_ptr<params> p_;
};

class rope_kernel {
 public:
  /// Plans the kernel: validates the spec and computes the per-pair constants. `seq_len` selects
  /// the frequencies of stateful types (dynamic, longrope) as transformers does; none = init state.
  rope_kernel(const spec::rope& s, strategy st, std::optional<std::int64_t> seq_len = std::nullopt);
  ~rope_kernel();
  rope_kernel(rope_kernel&&) noexcept;
  rope_kernel& operator=(rope_kernel&&) noexcept;

  const spec::rope& spec() const;
  strategy used_strategy() const;
  /// Number of frequency pairs (rotary_dim / 2).
  std::int64_t pairs() const;

  /// Per-pair frequencies as the strategy uses them, in fp32 (accurate: the exact value rounded
  /// once).
  std::span<const float> inv_freq() const;
  /// Attention factor m as the strategy applies it (fp32).
  float attention_factor() const;

  /// m·cos and m·sin of every pair at each position: cos and sin are [positions.size(), pairs()]
  /// row-major. T is float, half or bfloat16; the table strategies round to their storage type
  /// first.
  template <class T>
  void table(std::span<const std::int64_t> positions, std::span<T> cos, std::span<T> sin) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

extern template void rope_kernel::table<float>(std::span<const std::int64_t>, std::span<float>,
                                               std::span<float>) const;
extern template void rope_kernel::table<half>(std::span<const std::int64_t>, std::span<half>,
                                              std::span<half>) const;
extern template void rope_kernel::table<bfloat16>(std::span<const std::int64_t>,
                                                  std::span<bfloat16>, std::span<bfloat16>) const;

}  // namespace pev::kernel
