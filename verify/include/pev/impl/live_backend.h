#pragma once
// The backend of a live implementation (pev/impl/live.h): what answers pev's requests. pev has
// two, a dlopen'ed plugin (live_plugin.cpp) and a subprocess speaking the exec protocol
// (live_exec.cpp); a program that embeds pev supplies its own — pev's Python module answers with
// a Python callable (docs/python.md §4) — and wraps it in an impl::live_implementation (its public
// constructor), so that certify_live, the property suites and shrinking treat it as they treat a
// plugin.
//
// Requests carry the canonical SPEC string of the encoding asked for (a rebound implementation
// asks for generated specs), the output dtype, the sequence length of stateful rope types (−1:
// none) and the positions; buffers are row-major and already sized by the caller. A backend
// answers call_result::unsupported for a spec, dtype or output it does not implement, and throws
// pev::error for a failure (certification reports it as a failed check).

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pev/impl/implementation.h"
#include "pev/scalar/dtype.h"

namespace pev::impl::detail {

enum class call_result { ok, unsupported };

struct live_request {
  const std::string& spec;
  dtype type;
  std::int64_t seq_len;  // −1: none
  std::span<const std::int64_t> positions;
};

class live_backend {
 public:
  virtual ~live_backend() = default;
  /// "plugin", "exec", … (certificates: what was certified).
  virtual std::string kind() const = 0;
  /// What was loaded or run, for certificates (a path, a command).
  virtual std::string source() const = 0;
  /// The implementation's own name (escaped when it comes from outside).
  virtual std::string name() const = 0;
  /// The files it runs (a plugin library; the files an --exec command names).
  virtual std::vector<std::filesystem::path> files() const = 0;
  /// Why it can no longer be asked anything (it died, hung or broke the protocol), if it cannot.
  virtual std::optional<std::string> failure() const { return std::nullopt; }
  /// Whether it serves `what` at all (the exec greeting's `outputs`).
  virtual bool has(output what) const = 0;
  /// cos and sin [positions, pairs] in r.type.
  virtual call_result rope_table(const live_request& r, std::int64_t pairs, void* cos,
                                 void* sin) = 0;
  /// [pairs] fp32.
  virtual call_result inv_freq(const live_request& r, std::int64_t pairs, float* out) = 0;
  /// out [positions, heads, dim] from in, in r.type; out never aliases in.
  virtual call_result rope_rotate(const live_request& r, std::int64_t heads, std::int64_t dim,
                                  const void* in, void* out) = 0;
  /// [positions, d_model] in r.type.
  virtual call_result sinusoidal_pe(const live_request& r, std::int64_t d_model, void* out) = 0;
};

}  // namespace pev::impl::detail
