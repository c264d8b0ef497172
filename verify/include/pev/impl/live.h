#pragma once
// Live implementations: third-party code that pev calls, as opposed to dumps it reads.
// clang-format off
//   load_plugin  a shared library with pev's C ABI (pev/plugin/pev_plugin.h), loaded with dlopen;
//   start_exec   a subprocess speaking pev's stdin/stdout protocol (docs/exec-protocol.md).
// clang-format on
// Both are implementations (pev::impl::implementation) of an encoding; `rebind` gives the same
// backend (library, process) for another encoding, so properties can generate specs. Whatever
// the backend answers "unsupported" to is reported by supports() as not supported.
//
// A subprocess that does not answer within its timeout, answers more than the request asks for
// (a header longer than 64 KiB, or a tensor of another shape or dtype), or exits, is killed
// (SIGKILL) and the call throws pev::error saying which; so does a plugin call that returns
// PEV_ERROR. Certification reports such failures as failed checks.

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pev/impl/implementation.h"
#include "pev/kernel/strategy.h"
#include "pev/spec/spec.h"

namespace pev::impl {

class live_implementation;

struct exec_options {
  /// Longest wait for one response (and for the greeting).
  std::chrono::milliseconds timeout{60000};
};

struct plugin_options {
  /// Run the plugin in a child process (`server serve --plugin LIB`, speaking the exec protocol)
  /// instead of loading it into this one: a plugin that crashes, hangs or corrupts memory takes
  /// down only the child, and its calls fail (pev::error naming the signal) like an --exec's.
  bool isolate = false;
  /// The pev executable that serves the plugin (the CLI passes itself).
  std::filesystem::path server;
  /// Isolated only: longest wait for one response.
  std::chrono::milliseconds timeout{60000};
};

/// Loads a plugin for `claimed`; its results are held to `accuracy`'s contract by properties.
/// Throws pev::error for a library that cannot be loaded, lacks pev_plugin_abi_version, or was
/// built for another ABI version (isolated: for a child that cannot load it and answer the
/// greeting).
std::unique_ptr<live_implementation> load_plugin(const std::filesystem::path& library,
                                                 const spec::encoding& claimed,
                                                 kernel::strategy accuracy,
                                                 const plugin_options& o = {});

/// Starts `command` (run by /bin/sh -c) and greets it. Throws pev::error if it cannot be started
/// or does not answer the greeting.
std::unique_ptr<live_implementation> start_exec(const std::string& command,
                                                const spec::encoding& claimed,
                                                kernel::strategy accuracy,
                                                const exec_options& o = {});

/// The in-process plugin code running at this moment ("loading it (its constructors)",
/// "pev_plugin_abi_version", "pev_rope_table", …), or null: what an exit guard reports when a
/// plugin ends the process.
const char* plugin_call_in_progress();

/// The existing regular files an --exec command names: each word of the command (quotes removed,
/// no expansion), and the value of a `NAME=VALUE` word, that is a path to a regular file — the
/// script it runs, a model it loads. Certificates hash them; pev refuses them inside --out.
std::vector<std::filesystem::path> command_files(const std::string& command);

namespace detail {
class live_backend;
}

class live_implementation : public implementation {
 public:
  live_implementation(std::shared_ptr<detail::live_backend> backend, spec::encoding claimed,
                      kernel::strategy accuracy);
  ~live_implementation() override;

  /// The same backend for another encoding.
  std::unique_ptr<live_implementation> rebind(const spec::encoding& e) const;
  /// "plugin", "plugin (isolated)" or "exec", and what was loaded or run (for certificates).
  std::string kind() const;
  std::string source() const;
  /// The files it runs, for certificates to hash: the plugin library (isolated too), or the files
  /// an --exec command names (command_files).
  std::vector<std::filesystem::path> files() const;
  /// Why it can no longer be asked anything, when it cannot: the process died, hung or broke the
  /// protocol (already during the greeting). Its calls then throw this.
  std::optional<std::string> failure() const;

  std::string name() const override;
  const spec::encoding& claimed_spec() const override { return claimed_; }
  kernel::strategy claimed_accuracy() const override { return accuracy_; }
  bool supports(output what, dtype t) const override;

  std::vector<float> inv_freq(std::optional<std::int64_t> seq_len) const override;
  void rope_table(std::span<const std::int64_t> positions, std::optional<std::int64_t> seq_len,
                  std::span<float> cos, std::span<float> sin) const override;
  void rope_table(std::span<const std::int64_t> positions, std::optional<std::int64_t> seq_len,
                  std::span<half> cos, std::span<half> sin) const override;
  void rope_table(std::span<const std::int64_t> positions, std::optional<std::int64_t> seq_len,
                  std::span<bfloat16> cos, std::span<bfloat16> sin) const override;
  void rope_rotate(std::span<const std::int64_t> positions, std::optional<std::int64_t> seq_len,
                   kernel::heads_view<const float> in,
                   kernel::heads_view<float> out) const override;
  void rope_rotate(std::span<const std::int64_t> positions, std::optional<std::int64_t> seq_len,
                   kernel::heads_view<const half> in, kernel::heads_view<half> out) const override;
  void rope_rotate(std::span<const std::int64_t> positions, std::optional<std::int64_t> seq_len,
                   kernel::heads_view<const bfloat16> in,
                   kernel::heads_view<bfloat16> out) const override;
  void sinusoidal_pe(std::span<const std::int64_t> positions, std::span<float> out) const override;
  void sinusoidal_pe(std::span<const std::int64_t> positions, std::span<half> out) const override;
  void sinusoidal_pe(std::span<const std::int64_t> positions,
                     std::span<bfloat16> out) const override;

 private:
  template <class T>
  void table(std::span<const std::int64_t> positions, std::optional<std::int64_t> seq_len,
             std::span<T> cos, std::span<T> sin) const;
  template <class T>
  void rotate(std::span<const std::int64_t> positions, std::optional<std::int64_t> seq_len,
              kernel::heads_view<const T> in, kernel::heads_view<T> out) const;
  template <class T>
  void pe(std::span<const std::int64_t> positions, std::span<T> out) const;

  std::shared_ptr<detail::live_backend> backend_;
  spec::encoding claimed_;
  std::string spec_text_;
  kernel::strategy accuracy_;
};

}  // namespace pev::impl
