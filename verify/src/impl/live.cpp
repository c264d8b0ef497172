// Live implementations (live.h): the implementation that asks a backend (live_backend.h) — pev's
// plugin (live_plugin.cpp) or subprocess (live_exec.cpp), or one a program embedding pev supplies.

#include "pev/impl/live.h"

#include <fmt/format.h>

#include <utility>

#include "pev/core/error.h"
#include "pev/impl/live_backend.h"
#include "pev/spec/parse.h"

namespace pev::impl {

namespace {

using detail::call_result;

std::int64_t seq_or_none(std::optional<std::int64_t> s) { return s.value_or(-1); }

}  // namespace

live_implementation::live_implementation(std::shared_ptr<detail::live_backend> backend,
                                         spec::encoding claimed, kernel::strategy accuracy)
    : backend_(std::move(backend)),
      claimed_(std::move(claimed)),
      spec_text_(spec::to_spec_string(claimed_)),
      accuracy_(accuracy) {}

live_implementation::~live_implementation() = default;

std::unique_ptr<live_implementation> live_implementation::rebind(const spec::encoding& e) const {
  return std::make_unique<live_implementation>(backend_, e, accuracy_);
}

std::string live_implementation::kind() const { return backend_->kind(); }
std::string live_implementation::source() const { return backend_->source(); }
std::vector<std::filesystem::path> live_implementation::files() const { return backend_->files(); }
std::optional<std::string> live_implementation::failure() const { return backend_->failure(); }
std::string live_implementation::name() const { return backend_->kind() + ":" + backend_->name(); }

bool live_implementation::supports(output what, dtype t) const {
  if (!backend_->has(what)) return false;
  const bool rope = std::holds_alternative<spec::rope>(claimed_);
  switch (what) {
    case output::inv_freq:
      return rope && t == dtype::fp32;
    case output::rope_table:
    case output::rope_rotate:
      return rope;
    case output::sinusoidal_pe:
      return std::holds_alternative<spec::sinusoidal>(claimed_);
    default:
      return false;
  }
}

std::vector<float> live_implementation::inv_freq(std::optional<std::int64_t> seq_len) const {
  const auto& r = std::get<spec::rope>(claimed_);
  std::vector<float> out(static_cast<std::size_t>(r.pairs()));
  if (!backend_->has(output::inv_freq) ||
      backend_->inv_freq({spec_text_, dtype::fp32, seq_or_none(seq_len), {}}, r.pairs(),
                         out.data()) == call_result::unsupported) {
    unsupported(output::inv_freq);
  }
  return out;
}

template <class T>
void live_implementation::table(std::span<const std::int64_t> positions,
                                std::optional<std::int64_t> seq_len, std::span<T> cos,
                                std::span<T> sin) const {
  const auto* r = std::get_if<spec::rope>(&claimed_);
  if (!r || !backend_->has(output::rope_table)) unsupported(output::rope_table);
  const std::size_t need = positions.size() * static_cast<std::size_t>(r->pairs());
  if (cos.size() != need || sin.size() != need) {
    throw error(fmt::format("{}: rope_table needs cos and sin of {} values", name(), need));
  }
  if (backend_->rope_table({spec_text_, dtype_of<T>(), seq_or_none(seq_len), positions}, r->pairs(),
                           cos.data(), sin.data()) == call_result::unsupported) {
    unsupported(output::rope_table);
  }
}

template <class T>
void live_implementation::rotate(std::span<const std::int64_t> positions,
                                 std::optional<std::int64_t> seq_len,
                                 kernel::heads_view<const T> in, kernel::heads_view<T> out) const {
  if (!std::holds_alternative<spec::rope>(claimed_) || !backend_->has(output::rope_rotate)) {
    unsupported(output::rope_rotate);
  }
  if (in.tokens != static_cast<std::int64_t>(positions.size()) || out.tokens != in.tokens ||
      out.heads != in.heads || out.head_dim != in.head_dim) {
    throw error(fmt::format("{}: rope_rotate shapes do not match", name()));
  }
  // The ABI's out never aliases in: rotate in place through a copy.
  std::vector<T> copy(in.data.begin(), in.data.end());
  if (backend_->rope_rotate({spec_text_, dtype_of<T>(), seq_or_none(seq_len), positions}, in.heads,
                            in.head_dim, copy.data(),
                            out.data.data()) == call_result::unsupported) {
    unsupported(output::rope_rotate);
  }
}

template <class T>
void live_implementation::pe(std::span<const std::int64_t> positions, std::span<T> out) const {
  const auto* s = std::get_if<spec::sinusoidal>(&claimed_);
  if (!s || !backend_->has(output::sinusoidal_pe)) unsupported(output::sinusoidal_pe);
  if (out.size() != positions.size() * static_cast<std::size_t>(s->d_model)) {
    throw error(fmt::format("{}: sinusoidal_pe output has the wrong size", name()));
  }
  if (backend_->sinusoidal_pe({spec_text_, dtype_of<T>(), -1, positions}, s->d_model, out.data()) ==
      call_result::unsupported) {
    unsupported(output::sinusoidal_pe);
  }
}

void live_implementation::rope_table(std::span<const std::int64_t> p, std::optional<std::int64_t> s,
                                     std::span<float> c, std::span<float> n) const {
  table<float>(p, s, c, n);
}
void live_implementation::rope_table(std::span<const std::int64_t> p, std::optional<std::int64_t> s,
                                     std::span<half> c, std::span<half> n) const {
  table<half>(p, s, c, n);
}
void live_implementation::rope_table(std::span<const std::int64_t> p, std::optional<std::int64_t> s,
                                     std::span<bfloat16> c, std::span<bfloat16> n) const {
  table<bfloat16>(p, s, c, n);
}
void live_implementation::rope_rotate(std::span<const std::int64_t> p,
                                      std::optional<std::int64_t> s,
                                      kernel::heads_view<const float> in,
                                      kernel::heads_view<float> out) const {
  rotate<float>(p, s, in, out);
}
void live_implementation::rope_rotate(std::span<const std::int64_t> p,
                                      std::optional<std::int64_t> s,
                                      kernel::heads_view<const half> in,
                                      kernel::heads_view<half> out) const {
  rotate<half>(p, s, in, out);
}
void live_implementation::rope_rotate(std::span<const std::int64_t> p,
                                      std::optional<std::int64_t> s,
                                      kernel::heads_view<const bfloat16> in,
                                      kernel::heads_view<bfloat16> out) const {
  rotate<bfloat16>(p, s, in, out);
}
void live_implementation::sinusoidal_pe(std::span<const std::int64_t> p,
                                        std::span<float> out) const {
  pe<float>(p, out);
}
void live_implementation::sinusoidal_pe(std::span<const std::int64_t> p,
                                        std::span<half> out) const {
  pe<half>(p, out);
}
void live_implementation::sinusoidal_pe(std::span<const std::int64_t> p,
                                        std::span<bfloat16> out) const {
  pe<bfloat16>(p, out);
}

}  // namespace pev::impl
