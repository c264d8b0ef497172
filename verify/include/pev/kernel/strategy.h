#pragma once
// Named strategies of pev's production kernels (docs/design.md §3.6). A strategy's accuracy tier
// is visible in its name; each kernel's doc comment states its contract.
//
// clang-format off
//   hf          transformers' fp32 recipe: inv_freq = 1/powf(b, fl(2i/d)) and fp32 scaling
//               arithmetic, fp32 positions, fp32 product p·θ, cosf/sinf, fp32 attention factor,
//               cast to the output dtype. Faithful to the `hf` recipe reference up to the libm's
//               error.
//   ggml        llama.cpp's CPU recipe: fp32 θ recurrence θ_i = θ_{i−1}·powf(b, −2/d) from
//               float(p), freq_scale / per-pair factors / YaRN angle mix in fp32, cosf/sinf times
//               the fp32 magnitude factor. RoPE only.
//   table-fp16  the hf computation with the cache stored in fp16 (as vLLM stores it in the model
//               dtype).
//   table-bf16  the same, stored in bf16.
//   accurate    pev's own: exact frequencies (from the MPFR reference at plan time), exact angle
//               reduction by 192-bit fixed-point turns, double evaluation, one rounding to the
//               output type. Error independent of position; correctly rounded in all but ~1e-8 of
//               cases (docs/numerics.md §11).
// clang-format on

#include <optional>
#include <span>
#include <string_view>

#include "pev/scalar/dtype.h"

namespace pev::kernel {

enum class strategy { hf, ggml, table_fp16, table_bf16, accurate };

const char* to_string(strategy s);
/// "hf", "ggml", "table-fp16", "table-bf16", "accurate"; throws pev::error listing the names.
strategy parse_strategy(std::string_view name);
/// Every strategy, in the order above.
std::span<const strategy> all_strategies();

/// The dtype the strategy stores its cache in before the output dtype: fp16 / bf16 for the table
/// strategies; none (values go straight to the output dtype) otherwise.
std::optional<dtype> storage_of(strategy s);

}  // namespace pev::kernel
