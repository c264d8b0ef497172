// A pev plugin (pev/plugin/pev_plugin.h) serving pev's own built-in strategies, so the tests can
// certify every strategy through the plugin path as through files and --exec. The strategy comes
// from the environment variable PEV_PLUGIN_STRATEGY (default: accurate). PEV_PLUGIN_MISBEHAVE
// makes pev_rope_table misbehave as a broken plugin would, for the tests of `--isolate`:
// segv (a wild write: dies of SIGSEGV), abort, hang (sleeps for an hour), error (returns
// PEV_ERROR with a message), exit (calls exit(0) in it); and, elsewhere, exit-load (exit(0) in the
// library's constructor), exit-abi (exit(0) in pev_plugin_abi_version), stdout (prints to stdout
// when loaded and in every pev_rope_table call, and otherwise behaves).

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "pev/impl/implementation.h"
#include "pev/kernel/strategy.h"
#include "pev/plugin/pev_plugin.h"
#include "pev/spec/parse.h"

namespace {

using namespace pev;

kernel::strategy strategy() {
  const char* s = std::getenv("PEV_PLUGIN_STRATEGY");
  return kernel::parse_strategy(s && *s ? s : "accurate");
}

std::unique_ptr<impl::implementation> builtin(const pev_request* r) {
  const spec::encoding e = spec::parse_spec(r->spec);
  if (!impl::builtin_supports(e, strategy())) return nullptr;
  return impl::make_builtin(e, strategy());
}

std::string mode() {
  const char* m = std::getenv("PEV_PLUGIN_MISBEHAVE");
  return m ? m : "";
}

// Misbehaviour before pev calls anything: in the library's constructor.
__attribute__((constructor)) void on_load() {
  if (mode() == "exit-load") std::exit(0);
  if (mode() == "stdout") {
    std::printf("plugin loaded (a debug print on stdout)\n");
    std::fflush(stdout);
  }
}

// PEV_PLUGIN_MISBEHAVE in pev_rope_table: returns PEV_ERROR's message for "error", nothing for the
// modes that behave there; does not return for the others.
const char* misbehave() {
  const std::string mode = ::mode();
  if (mode.empty() || mode == "exit-load" || mode == "exit-abi") return nullptr;
  if (mode == "stdout") {
    std::printf("pev_rope_table called\n");
    std::fflush(stdout);
    return nullptr;
  }
  if (mode == "exit") std::exit(0);
  if (mode == "segv") {
    // A wild write. The default action, not a sanitizer's handler, so that the process dies of
    // the signal in every build (UBSan would catch a store through null first).
    std::signal(SIGSEGV, SIG_DFL);
    volatile int* volatile p = reinterpret_cast<int*>(16);
    *p = 1;
  } else if (mode == "abort") {
    std::abort();
  } else if (mode == "hang") {
    sleep(3600);
  }
  return "PEV_PLUGIN_MISBEHAVE=error: this plugin refuses";
}

std::optional<std::int64_t> seq(const pev_request* r) {
  return r->seq_len < 0 ? std::nullopt : std::optional<std::int64_t>(r->seq_len);
}

int fail(const std::exception& e, char* err, size_t n) {
  std::snprintf(err, n, "%s", e.what());
  return PEV_ERROR;
}

template <class F>
int with_type(const pev_request* r, F&& f) {
  switch (r->dtype) {
    case PEV_DTYPE_F32:
      return f(std::type_identity<float>{});
    case PEV_DTYPE_F16:
      return f(std::type_identity<half>{});
    case PEV_DTYPE_BF16:
      return f(std::type_identity<bfloat16>{});
    default:
      return PEV_UNSUPPORTED;
  }
}

}  // namespace

extern "C" {

uint32_t pev_plugin_abi_version(void) {
  if (mode() == "exit-abi") std::exit(0);
  return PEV_PLUGIN_ABI_VERSION;
}
const char* pev_plugin_name(void) { return "pev-builtin"; }

int pev_rope_table(const pev_request* r, void* cos, void* sin, char* err, size_t n) {
  if (const char* m = misbehave()) {
    std::snprintf(err, n, "%s", m);
    return PEV_ERROR;
  }
  try {
    const auto im = builtin(r);
    if (!im || !std::holds_alternative<spec::rope>(im->claimed_spec())) return PEV_UNSUPPORTED;
    const auto pairs = static_cast<std::size_t>(std::get<spec::rope>(im->claimed_spec()).pairs());
    const auto P = static_cast<std::size_t>(r->n_positions);
    const std::span<const std::int64_t> pos(r->positions, P);
    return with_type(r, [&](auto tag) {
      using T = typename decltype(tag)::type;
      im->rope_table(pos, seq(r), std::span<T>(static_cast<T*>(cos), P * pairs),
                     std::span<T>(static_cast<T*>(sin), P * pairs));
      return PEV_OK;
    });
  } catch (const std::exception& e) {
    return fail(e, err, n);
  }
}

int pev_rope_inv_freq(const pev_request* r, float* out, char* err, size_t n) {
  try {
    const auto im = builtin(r);
    if (!im || !im->supports(impl::output::inv_freq, dtype::fp32)) return PEV_UNSUPPORTED;
    const std::vector<float> f = im->inv_freq(seq(r));
    std::memcpy(out, f.data(), f.size() * sizeof(float));
    return PEV_OK;
  } catch (const std::exception& e) {
    return fail(e, err, n);
  }
}

int pev_rope_rotate(const pev_request* r, int64_t heads, int64_t head_dim, const void* in,
                    void* out, char* err, size_t n) {
  try {
    const auto im = builtin(r);
    if (!im || !std::holds_alternative<spec::rope>(im->claimed_spec())) return PEV_UNSUPPORTED;
    const std::int64_t T_ = r->n_positions;
    const auto count = static_cast<std::size_t>(T_ * heads * head_dim);
    const std::span<const std::int64_t> pos(r->positions, static_cast<std::size_t>(T_));
    return with_type(r, [&](auto tag) {
      using T = typename decltype(tag)::type;
      im->rope_rotate(
          pos, seq(r),
          kernel::heads_view<const T>{std::span<const T>(static_cast<const T*>(in), count), T_,
                                      heads, head_dim},
          kernel::heads_view<T>{std::span<T>(static_cast<T*>(out), count), T_, heads, head_dim});
      return PEV_OK;
    });
  } catch (const std::exception& e) {
    return fail(e, err, n);
  }
}

int pev_sinusoidal_pe(const pev_request* r, void* out, char* err, size_t n) {
  try {
    const auto im = builtin(r);
    if (!im || !std::holds_alternative<spec::sinusoidal>(im->claimed_spec())) {
      return PEV_UNSUPPORTED;
    }
    const auto d = static_cast<std::size_t>(std::get<spec::sinusoidal>(im->claimed_spec()).d_model);
    const auto P = static_cast<std::size_t>(r->n_positions);
    return with_type(r, [&](auto tag) {
      using T = typename decltype(tag)::type;
      im->sinusoidal_pe(std::span<const std::int64_t>(r->positions, P),
                        std::span<T>(static_cast<T*>(out), P * d));
      return PEV_OK;
    });
  } catch (const std::exception& e) {
    return fail(e, err, n);
  }
}

}  // extern "C"
