#pragma once
// Internal: pieces shared by the kernels of every family: how a strategy stores a value, and the
// families without a `ggml` pipeline.

#include "narrow.h"
#include "pev/kernel/strategy.h"

namespace pev::kernel::detail {

/// Throws pev::error("strategy ggml has no <family> kernel") for st == ggml.
void reject_ggml(strategy st, const char* family);

/// An fp32 value of the hf pipeline stored in the strategy's storage format (fp16/bf16 for the
/// table strategies, RNE), then converted to T.
template <class T>
inline T store_float(float v, std::optional<dtype> where) {
  if (where == dtype::fp16) return from_float<T>(static_cast<float>(half(v)));
  if (where == dtype::bf16) return from_float<T>(static_cast<float>(bfloat16(v)));
  return from_float<T>(v);
}

/// The same for a value the hf pipeline computes in double (DistilBERT's NumPy table, stored
/// table entries): one rounding to the storage format (or to T).
template <class T>
inline T store_double(double v, std::optional<dtype> where) {
  if (where == dtype::fp16) return from_float<T>(static_cast<float>(narrow<half>(v)));
  if (where == dtype::bf16) return from_float<T>(static_cast<float>(narrow<bfloat16>(v)));
  return narrow<T>(v);
}

}  // namespace pev::kernel::detail
