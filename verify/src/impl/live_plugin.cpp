// A plugin (live.h): a shared library with pev's C ABI (pev/plugin/pev_plugin.h), loaded with
// dlopen; isolated, it is served by `pev serve --plugin` in a subprocess (live_exec.cpp).

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <string_view>

#include "live_backends.h"
#include "pev/core/error.h"
#include "pev/core/text.h"
#include "pev/impl/live.h"
#include "pev/impl/live_backend.h"
#include "pev/plugin/pev_plugin.h"

namespace pev::impl {

namespace {

using detail::call_result;
using detail::live_request;

int abi_dtype(dtype t) {
  switch (t) {
    case dtype::fp32:
      return PEV_DTYPE_F32;
    case dtype::fp16:
      return PEV_DTYPE_F16;
    case dtype::bf16:
      return PEV_DTYPE_BF16;
    default:
      break;
  }
  throw error(std::string("the plugin ABI has no dtype ") + to_string(t));
}

// The plugin code running now, if any (plugin_call_in_progress).
std::atomic<const char*> current_plugin_call{nullptr};

// Marks the plugin code that runs while it lives.
class in_plugin {
 public:
  explicit in_plugin(const char* what) { current_plugin_call.store(what); }
  ~in_plugin() { current_plugin_call.store(nullptr); }
  in_plugin(const in_plugin&) = delete;
  in_plugin& operator=(const in_plugin&) = delete;
};

class plugin_backend final : public detail::live_backend {
 public:
  explicit plugin_backend(const std::filesystem::path& lib) : path_(lib.string()) {
    // RTLD_LOCAL: the plugin's symbols do not leak into pev's; RTLD_NOW: unresolved symbols are an
    // error here, not a crash later.
    // A regular file only: dlopen of a FIFO would wait for a writer forever.
    std::error_code ec;
    if (std::filesystem::exists(lib, ec) && !std::filesystem::is_regular_file(lib, ec)) {
      throw error(fmt::format("--plugin {}: not a regular file", path_));
    }
    {
      const in_plugin running("loading it (its constructors)");
      handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    }
    if (!handle_) throw error(fmt::format("--plugin {}: cannot load: {}", path_, dlerror()));
    const auto abi =
        reinterpret_cast<pev_plugin_abi_version_fn>(dlsym(handle_, PEV_PLUGIN_SYMBOL_ABI_VERSION));
    if (!abi) {
      dlclose(handle_);
      throw error(fmt::format("--plugin {}: no symbol {} (is it a pev plugin? see pev_plugin.h)",
                              path_, PEV_PLUGIN_SYMBOL_ABI_VERSION));
    }
    const unsigned v = [&] {
      const in_plugin running(PEV_PLUGIN_SYMBOL_ABI_VERSION);
      return abi();
    }();
    if (v != PEV_PLUGIN_ABI_VERSION) {
      dlclose(handle_);
      throw error(fmt::format("--plugin {}: built for ABI version {}, pev speaks version {}", path_,
                              v, PEV_PLUGIN_ABI_VERSION));
    }
    if (const auto n = reinterpret_cast<pev_plugin_name_fn>(dlsym(handle_, "pev_plugin_name"))) {
      // Shown in summaries and certificates: escaped, and short.
      const in_plugin running(PEV_PLUGIN_SYMBOL_NAME);
      if (const char* s = n()) name_ = escaped(std::string_view(s).substr(0, 1000), {.max = 200});
    }
    if (name_.empty()) name_ = std::filesystem::path(path_).filename().string();
    table_ = reinterpret_cast<pev_rope_table_fn>(dlsym(handle_, PEV_PLUGIN_SYMBOL_ROPE_TABLE));
    inv_ = reinterpret_cast<pev_rope_inv_freq_fn>(dlsym(handle_, PEV_PLUGIN_SYMBOL_ROPE_INV_FREQ));
    rotate_ = reinterpret_cast<pev_rope_rotate_fn>(dlsym(handle_, PEV_PLUGIN_SYMBOL_ROPE_ROTATE));
    pe_ = reinterpret_cast<pev_sinusoidal_pe_fn>(dlsym(handle_, PEV_PLUGIN_SYMBOL_SINUSOIDAL_PE));
  }
  ~plugin_backend() override {
    const in_plugin running("unloading it (its destructors)");
    dlclose(handle_);
  }

  std::string kind() const override { return "plugin"; }
  std::string source() const override { return path_; }
  std::string name() const override { return name_; }
  std::vector<std::filesystem::path> files() const override { return {path_}; }
  bool has(output what) const override {
    switch (what) {
      case output::rope_table:
        return table_ != nullptr;
      case output::inv_freq:
        return inv_ != nullptr;
      case output::rope_rotate:
        return rotate_ != nullptr;
      case output::sinusoidal_pe:
        return pe_ != nullptr;
      default:
        return false;
    }
  }

  call_result rope_table(const live_request& r, std::int64_t, void* cos, void* sin) override {
    const in_plugin running("pev_rope_table");
    return status(table_(request(r), cos, sin, err_, sizeof err_), "pev_rope_table");
  }
  call_result inv_freq(const live_request& r, std::int64_t, float* out) override {
    const in_plugin running("pev_rope_inv_freq");
    return status(inv_(request(r), out, err_, sizeof err_), "pev_rope_inv_freq");
  }
  call_result rope_rotate(const live_request& r, std::int64_t heads, std::int64_t dim,
                          const void* in, void* out) override {
    const in_plugin running("pev_rope_rotate");
    return status(rotate_(request(r), heads, dim, in, out, err_, sizeof err_), "pev_rope_rotate");
  }
  call_result sinusoidal_pe(const live_request& r, std::int64_t, void* out) override {
    const in_plugin running("pev_sinusoidal_pe");
    return status(pe_(request(r), out, err_, sizeof err_), "pev_sinusoidal_pe");
  }

 private:
  const pev_request* request(const live_request& r) {
    req_ = {PEV_PLUGIN_ABI_VERSION, r.spec.c_str(),
            abi_dtype(r.type),      r.seq_len,
            r.positions.data(),     static_cast<std::int64_t>(r.positions.size())};
    err_[0] = '\0';
    return &req_;
  }
  call_result status(int rc, const char* fn) {
    if (rc == PEV_OK) return call_result::ok;
    if (rc == PEV_UNSUPPORTED) return call_result::unsupported;
    err_[sizeof err_ - 1] = '\0';
    throw error(fmt::format("plugin {}: {} failed (status {}): {}", name_, fn, rc,
                            err_[0] ? escaped(err_, {.max = 1000}) : "no message"));
  }

  std::string path_, name_;
  void* handle_ = nullptr;
  pev_rope_table_fn table_ = nullptr;
  pev_rope_inv_freq_fn inv_ = nullptr;
  pev_rope_rotate_fn rotate_ = nullptr;
  pev_sinusoidal_pe_fn pe_ = nullptr;
  pev_request req_{};
  char err_[1024] = {};
};

}  // namespace

const char* plugin_call_in_progress() { return current_plugin_call.load(); }

std::unique_ptr<live_implementation> load_plugin(const std::filesystem::path& library,
                                                 const spec::encoding& claimed,
                                                 kernel::strategy accuracy,
                                                 const plugin_options& o) {
  if (!o.isolate) {
    return std::make_unique<live_implementation>(std::make_shared<plugin_backend>(library), claimed,
                                                 accuracy);
  }
  if (o.server.empty()) throw error("--isolate: no pev executable to run the plugin in");
  const std::string lib = std::filesystem::absolute(library).string();
  return std::make_unique<live_implementation>(
      detail::exec_backend_for(
          lib, std::vector<std::string>{o.server.string(), "serve", "--plugin", lib},
          "plugin (isolated)", fmt::format("--plugin {} (isolated)", library.string()),
          std::vector<std::filesystem::path>{library}, exec_options{o.timeout}),
      claimed, accuracy);
}

}  // namespace pev::impl
