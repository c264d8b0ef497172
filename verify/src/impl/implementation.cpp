// The implementation interface's defaults and the adapter that makes every built-in strategy an
// implementation.

#include "pev/impl/implementation.h"

#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <variant>

#include "pev/core/error.h"
#include "pev/core/names.h"
#include "pev/kernel/absolute.h"
#include "pev/kernel/relative.h"
#include "pev/kernel/rope.h"

namespace pev::impl {

namespace {

// The names of output (docs/design.md §11.11).
constexpr name_table<output, 8> kOutputs({{{output::inv_freq, "inv_freq"},
                                           {output::attention_factor, "attention_factor"},
                                           {output::rope_table, "rope_table"},
                                           {output::rope_rotate, "rope_rotate"},
                                           {output::sinusoidal_pe, "sinusoidal_pe"},
                                           {output::alibi_slopes, "alibi_slopes"},
                                           {output::alibi_bias, "alibi_bias"},
                                           {output::t5_buckets, "t5_buckets"}}});

}  // namespace

const char* to_string(output o) { return kOutputs.name(o); }

void implementation::unsupported(output what) const {
  throw error(name() + ": " + to_string(what) + " is not supported");
}

std::vector<float> implementation::inv_freq(std::optional<std::int64_t>) const {
  unsupported(output::inv_freq);
}
double implementation::attention_factor(std::optional<std::int64_t>) const {
  unsupported(output::attention_factor);
}
void implementation::rope_table(std::span<const std::int64_t>, std::optional<std::int64_t>,
                                std::span<float>, std::span<float>) const {
  unsupported(output::rope_table);
}
void implementation::rope_table(std::span<const std::int64_t>, std::optional<std::int64_t>,
                                std::span<half>, std::span<half>) const {
  unsupported(output::rope_table);
}
void implementation::rope_table(std::span<const std::int64_t>, std::optional<std::int64_t>,
                                std::span<bfloat16>, std::span<bfloat16>) const {
  unsupported(output::rope_table);
}
void implementation::rope_rotate(std::span<const std::int64_t>, std::optional<std::int64_t>,
                                 kernel::heads_view<const float>, kernel::heads_view<float>) const {
  unsupported(output::rope_rotate);
}
void implementation::rope_rotate(std::span<const std::int64_t>, std::optional<std::int64_t>,
                                 kernel::heads_view<const half>, kernel::heads_view<half>) const {
  unsupported(output::rope_rotate);
}
void implementation::rope_rotate(std::span<const std::int64_t>, std::optional<std::int64_t>,
                                 kernel::heads_view<const bfloat16>,
                                 kernel::heads_view<bfloat16>) const {
  unsupported(output::rope_rotate);
}
void implementation::sinusoidal_pe(std::span<const std::int64_t>, std::span<float>) const {
  unsupported(output::sinusoidal_pe);
}
void implementation::sinusoidal_pe(std::span<const std::int64_t>, std::span<half>) const {
  unsupported(output::sinusoidal_pe);
}
void implementation::sinusoidal_pe(std::span<const std::int64_t>, std::span<bfloat16>) const {
  unsupported(output::sinusoidal_pe);
}
void implementation::alibi_slopes(std::span<float>) const { unsupported(output::alibi_slopes); }
void implementation::alibi_slopes(std::span<half>) const { unsupported(output::alibi_slopes); }
void implementation::alibi_slopes(std::span<bfloat16>) const { unsupported(output::alibi_slopes); }
void implementation::alibi_bias(std::span<const std::int64_t>, std::span<const std::int64_t>,
                                std::span<float>) const {
  unsupported(output::alibi_bias);
}
void implementation::alibi_bias(std::span<const std::int64_t>, std::span<const std::int64_t>,
                                std::span<half>) const {
  unsupported(output::alibi_bias);
}
void implementation::alibi_bias(std::span<const std::int64_t>, std::span<const std::int64_t>,
                                std::span<bfloat16>) const {
  unsupported(output::alibi_bias);
}
void implementation::t5_buckets(std::span<const std::int64_t>, std::span<std::int64_t>) const {
  unsupported(output::t5_buckets);
}

std::vector<std::int64_t> implementation::stream_map() const {
  const auto* r = std::get_if<spec::rope>(&claimed_spec());
  if (r == nullptr) unsupported(output::rope_table);
  return spec::mrope_streams(*r);
}

spec::rope implementation::rotation_spec() const {
  const auto* r = std::get_if<spec::rope>(&claimed_spec());
  if (r == nullptr) unsupported(output::rope_rotate);
  return *r;
}

namespace detail {
std::int64_t stream_tokens(const implementation& impl, std::size_t positions,
                           std::int64_t& streams) {
  const auto* r = std::get_if<spec::rope>(&impl.claimed_spec());
  if (r == nullptr) throw error(impl.name() + ": MRoPE positions need a rope encoding");
  streams = r->streams();
  const auto n = static_cast<std::int64_t>(positions);
  if (n % streams != 0) {
    throw error(impl.name() + ": " + std::to_string(n) + " positions do not form [" +
                std::to_string(streams) + ", T] MRoPE streams");
  }
  return n / streams;
}
}  // namespace detail

namespace {

// The adapter: one built-in strategy over one encoding. RoPE kernels are planned per sequence
// length (stateful types) and cached; rotation uses the strategy's own table in its storage type
// (fp32 for hf, ggml and accurate), as an engine would.
class builtin final : public typed_implementation<builtin> {
 public:
  builtin(const spec::encoding& e, kernel::strategy st) : spec_(e), st_(st) {
    spec::validate(e);
    if (!builtin_supports(e, st)) {
      const auto* r = std::get_if<spec::rope>(&e);
      if (r && r->type == spec::rope_type::ggml) {
        throw error(std::string("strategy ") + kernel::to_string(st) +
                    " has no pipeline for the ggml form (ggml_rope_ext's own parameters, "
                    "docs/encodings.md §8.7): its strategies are ggml and accurate");
      }
      throw error(std::string("strategy ") + kernel::to_string(st) + " has no " +
                  spec::family_name(e) + " pipeline");
    }
  }

  std::string name() const override { return kernel::to_string(st_); }
  const spec::encoding& claimed_spec() const override { return spec_; }
  kernel::strategy claimed_accuracy() const override { return st_; }
  bool supports(output what, dtype) const override {
    switch (what) {
      case output::inv_freq:
      case output::attention_factor:
      case output::rope_table:
      case output::rope_rotate:
        return std::holds_alternative<spec::rope>(spec_);
      case output::sinusoidal_pe:
        return std::holds_alternative<spec::sinusoidal>(spec_);
      case output::alibi_slopes:
      case output::alibi_bias:
        return std::holds_alternative<spec::alibi>(spec_);
      case output::t5_buckets:
        return std::holds_alternative<spec::t5>(spec_);
    }
    return false;
  }

  std::vector<float> inv_freq(std::optional<std::int64_t> seq) const override {
    const auto f = rope(seq, output::inv_freq).inv_freq();
    return {f.begin(), f.end()};
  }
  double attention_factor(std::optional<std::int64_t> seq) const override {
    return rope(seq, output::attention_factor).attention_factor();
  }
  template <class T>
  void table_t(std::span<const std::int64_t> p, std::optional<std::int64_t> seq, std::span<T> c,
               std::span<T> s) const {
    rope(seq, output::rope_table).template table<T>(p, c, s);
  }
  template <class TQ>
  void rotate_t(std::span<const std::int64_t> p, std::optional<std::int64_t> seq,
                kernel::heads_view<const TQ> in, kernel::heads_view<TQ> out) const {
    // The strategy's table in its storage dtype (fp32 without one), then the rotation.
    visit_output_float(kernel::storage_of(st_).value_or(dtype::fp32), [&](auto tag) {
      rotate_with<typename decltype(tag)::type>(p, seq, in, out);
    });
  }
  template <class T>
  void pe_t(std::span<const std::int64_t> p, std::span<T> out) const {
    kernel::sinusoidal_table<T>(family<spec::sinusoidal>(output::sinusoidal_pe), st_, p, out);
  }
  template <class T>
  void slopes_t(std::span<T> out) const {
    kernel::alibi_slopes<T>(family<spec::alibi>(output::alibi_slopes), st_, out);
  }
  template <class T>
  void bias_t(std::span<const std::int64_t> q, std::span<const std::int64_t> k,
              std::span<T> out) const {
    kernel::alibi_bias<T>(family<spec::alibi>(output::alibi_bias), st_, q, k, out);
  }
  void t5_buckets(std::span<const std::int64_t> r, std::span<std::int64_t> out) const override {
    kernel::t5_buckets(family<spec::t5>(output::t5_buckets), st_, r, out);
  }

 private:
  // The spec of family S, or pev::error naming `what` for another family.
  template <class S>
  const S& family(output what) const {
    if (const S* s = std::get_if<S>(&spec_)) return *s;
    unsupported(what);
  }

  const kernel::rope_kernel& rope(std::optional<std::int64_t> seq, output what) const {
    const auto& s = family<spec::rope>(what);
    if (!s.stateful()) seq.reset();
    const std::lock_guard lock(mutex_);
    auto it = kernels_.find(seq);
    if (it == kernels_.end()) it = kernels_.emplace(seq, kernel::rope_kernel(s, st_, seq)).first;
    return it->second;
  }

  template <class TT, class TQ>
  void rotate_with(std::span<const std::int64_t> p, std::optional<std::int64_t> seq,
                   kernel::heads_view<const TQ> in, kernel::heads_view<TQ> out) const {
    const kernel::rope_kernel& k = rope(seq, output::rope_rotate);
    const auto n = p.size() * static_cast<std::size_t>(k.pairs());
    std::vector<TT> c(n), s(n);
    k.table<TT>(p, c, s);
    std::vector<std::int64_t> rows(p.size());
    std::iota(rows.begin(), rows.end(), std::int64_t{0});
    const kernel::rope_table_view<TT> view{c, s, static_cast<std::int64_t>(p.size()), k.pairs()};
    kernel::rope_apply<TQ, TT>(family<spec::rope>(output::rope_rotate), view, rows, in, out);
  }

  spec::encoding spec_;
  kernel::strategy st_;
  mutable std::mutex mutex_;
  mutable std::map<std::optional<std::int64_t>, kernel::rope_kernel> kernels_;
};

}  // namespace

spec::rope plain_rope(const spec::rope& s) {
  spec::rope p;
  p.head_dim = s.head_dim;
  p.partial_rotary_factor = s.partial_rotary_factor;
  p.rotary_dim = s.rotary_dim;
  p.rope_theta = s.rope_theta;
  p.layout = s.layout;
  return p;
}

bool builtin_supports(const spec::encoding& e, kernel::strategy st) {
  if (const auto* r = std::get_if<spec::rope>(&e)) {
    // The ggml form has the ggml pipeline and the exact one only (docs/encodings.md §8.7).
    return r->type != spec::rope_type::ggml || st == kernel::strategy::ggml ||
           st == kernel::strategy::accurate;
  }
  if (st == kernel::strategy::ggml) return false;
  return std::holds_alternative<spec::sinusoidal>(e) || std::holds_alternative<spec::alibi>(e) ||
         std::holds_alternative<spec::t5>(e);
}

std::unique_ptr<implementation> make_builtin(const spec::encoding& e, kernel::strategy st) {
  return std::make_unique<builtin>(e, st);
}

}  // namespace pev::impl
