#pragma once
// Recipes: the reference's second level (docs/design.md §3.5, docs/numerics.md §6.2). A recipe
// names the points where a declared pipeline rounds, and the format it rounds to there; everything
// between two points is exact. It is data: the reference evaluates one formula per encoding and
// asks the recipe, at each named point, whether and where to round. `exact` rounds nowhere: it is
// the mathematical definition.
//
// clang-format off
// Shipped recipes:
//   exact — no rounding (R1).
//   hf    — Hugging Face transformers: host scalars (attention factor, YaRN correction range,
//           llama3 band edges) in Python double; inv_freq from an fp32 pow with the base rounded
//           to fp32, fp32 reciprocal and fp32 scaling arithmetic; fp32 positions; fp32 product
//           p·θ; cos/sin of the rounded angle rounded to fp32 (an ideal libm); fp32
//           multiplication by the attention factor (itself rounded to fp32 first, as a CPU scalar
//           operand is). Sinusoidal interleaved follows DistilBERT/XLM (NumPy float64, angle
//           p / b^(2⌊j/2⌋/d)); blocked follows fairseq (fp32 exp of fp32 exponents). ALiBi
//           follows BLOOM (fp32 pow of an fp32 base), T5 buckets evaluate the log branch in fp32,
//           learned interpolation in fp32.
//   ggml  — llama.cpp's CPU rope: θ_0 = float(p), θ_i = fl(θ_{i−1}·ts) with
//           ts = powf(b, −2/n_dims); frequency scaling (freq_scale = 1/factor), per-pair factors
//           (llama3 rope_freqs, LongRoPE lists) and the YaRN angle mix in fp32 without FMA; corr
//           dims with logf; cos/sin rounded to fp32 then multiplied by the fp32 magnitude scale.
//           RoPE only.
// clang-format on

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "pev/core/real.h"
#include "pev/scalar/dtype.h"

namespace pev::ref {

/// Where a rounding point rounds to: a float dtype, or none ("exact": no rounding here).
using rounding = std::optional<dtype>;

/// Rounds x once, to nearest even, to the dtype (identity for none).
real round(rounding f, const real& x);

enum class frequency_method {
  power,       // θ_i = 1 / b^(2i/d), then the rope_type's scaling of frequencies
  recurrence,  // θ_i(p) = θ_{i−1}(p)·b^(−2/d) per position, then angle-level scaling (ggml)
};

/// Rounding points of a RoPE pipeline.
struct rope_points {
  frequency_method method = frequency_method::power;
  rounding host =
      std::nullopt;  // scalars computed once on the host (attention factor, ranges, bands)
  rounding frequency =
      std::nullopt;  // every operation that produces per-pair frequencies or the ramp
  rounding position = std::nullopt;  // the position as an arithmetic operand
  rounding angle =
      std::nullopt;  // the angle p·θ_i (and every angle-level operation of `recurrence`)
  rounding trig = std::nullopt;   // cos/sin of the rounded angle
  rounding scale = std::nullopt;  // the attention factor operand and its product with cos/sin
};

/// Rounding points of a sinusoidal pipeline.
struct sinusoidal_points {
  rounding frequency = std::nullopt;  // exponent, pow/exp, reciprocal
  rounding position = std::nullopt;
  rounding angle = std::nullopt;  // p·ω (or p / b^x when `divide`)
  rounding trig = std::nullopt;
  bool divide = false;  // angle = p / b^x (NumPy DistilBERT) instead of p·ω
};

/// Rounding points of ALiBi slopes: the base 2^(−8/P) on the host, then base^h.
struct alibi_points {
  rounding host = std::nullopt;
  rounding power = std::nullopt;
};

struct recipe {
  std::string_view name;
  std::string_view description;
  std::optional<rope_points> rope;
  std::optional<sinusoidal_points> sinusoidal_interleaved;
  std::optional<sinusoidal_points> sinusoidal_blocked;
  std::optional<alibi_points> alibi;
  std::optional<rounding> t5;       // the log-branch arithmetic (none: no T5 pipeline)
  std::optional<rounding> learned;  // the interpolation arithmetic (none: no pipeline)
};

const recipe& exact_recipe();
const recipe& hf_recipe();
const recipe& ggml_recipe();
/// Every shipped recipe, exact first.
std::span<const recipe* const> all_recipes();
/// The recipe called `name`; throws pev::error listing the names otherwise.
const recipe& find_recipe(std::string_view name);

}  // namespace pev::ref
