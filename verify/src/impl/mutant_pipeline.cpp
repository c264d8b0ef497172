// Applying the mutant catalogue (mutants.h, docs/encodings.md §10.2): one class runs every
// entry — pev's correct pipeline (hf, or ggml) with the entry's hooks applied: the spec the
// kernels see, the restated hf table (frequencies, position, angle, trig, magnitude), the table
// after it is computed, the rotation's spec, the relative encodings' formulas. The entries
// themselves are in mutants.cpp.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "pev/core/error.h"
#include "pev/impl/mutants.h"
#include "pev/kernel/apply.h"
#include "pev/kernel/fast_math.h"
#include "pev/kernel/rope.h"
#include "pev/ref/recipe.h"
#include "pev/ref/relative.h"
#include "pev/ref/rope.h"

namespace pev::impl {
namespace {

template <class T>
T from_f(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    return T(v);
  }
}

/// One class for every mutant: a correct pipeline (hf, or ggml) with the entry's hooks applied.
class mutant final : public typed_implementation<mutant> {
 public:
  mutant(const mutant_info& info, const spec::encoding& e, const mutant_options& o)
      : info_(info),
        claimed_(e),
        base_strategy_(o.base.value_or(info.base)),
        output_rotation_(o.rotate_in_output_type),
        freq_override_(o.inv_freq) {
    if (!info.applies(e)) {
      throw error(std::string("mutant ") + info.id + " does not apply to " +
                  spec::to_spec_string(e));
    }
    if (!mutant_replays_on(info, base_strategy_)) {
      throw error(std::string("mutant ") + info.id + " restates the hf table: no " +
                  kernel::to_string(base_strategy_) + " replay");
    }
    const mutant_hooks& h = info.hooks;
    const spec::encoding plan = planned_spec(info, e, o);
    if (const auto* r = std::get_if<spec::rope>(&e)) {
      rotation_ = *r;
      if (h.rotation) h.rotation(rotation_);
      if (h.rotation_table) rotation_kernel_ = make_builtin(rotation_, base_strategy_);
    }
    base_ = make_builtin(plan, base_strategy_);
  }

  std::string name() const override { return std::string("mutant:") + info_.id; }
  const spec::encoding& claimed_spec() const override { return claimed_; }
  kernel::strategy claimed_accuracy() const override { return base_strategy_; }
  bool supports(output what, dtype t) const override { return base_->supports(what, t); }

  std::vector<std::int64_t> stream_map() const override {
    std::vector<std::int64_t> v = implementation::stream_map();
    if (hooks().stream) {
      const auto& r = std::get<spec::rope>(claimed_);
      for (std::size_t i = 0; i < v.size(); ++i) {
        v[i] = hooks().stream(r, static_cast<std::int64_t>(i));
      }
    }
    return v;
  }

  spec::rope rotation_spec() const override { return rotation_; }

  // RoPE -----------------------------------------------------------------------------------------
  std::vector<float> inv_freq(std::optional<std::int64_t> seq) const override {
    std::vector<float> f = own_frequencies() ? freq_override_ : base_->inv_freq(length(seq));
    if (hooks().frequencies) hooks().frequencies(std::get<spec::rope>(claimed_), f);
    return f;
  }

  double attention_factor(std::optional<std::int64_t> seq) const override {
    return static_cast<double>(magnitude(seq));
  }

  // The per-dtype overloads forward here (typed_implementation).
  template <class T>
  void table_t(std::span<const std::int64_t> p, std::optional<std::int64_t> seq, std::span<T> c,
               std::span<T> s) const {
    std::vector<float> cf(c.size()), sf(s.size());
    table_f32(p, seq, cf, sf);
    for (std::size_t k = 0; k < c.size(); ++k) {
      c[k] = from_f<T>(cf[k]);
      s[k] = from_f<T>(sf[k]);
    }
  }
  // The fp32 table the rotation applies at p: the rotation kernel's, else the mistaken table;
  // sin negated for the backward rotation used forward.
  void rotation_table(std::span<const std::int64_t> p, std::optional<std::int64_t> seq,
                      std::vector<float>& c, std::vector<float>& s) const {
    if (rotation_kernel_) {
      rotation_kernel_->rope_table(p, length(seq), std::span<float>(c), std::span<float>(s));
    } else {
      table_f32(p, seq, c, s);
    }
    if (hooks().backward) {
      for (float& v : s) v = -v;
    }
  }
  template <class TQ>
  void rotate_t(std::span<const std::int64_t> p, std::optional<std::int64_t> seq,
                kernel::heads_view<const TQ> in, kernel::heads_view<TQ> out) const {
    if constexpr (!std::is_same_v<TQ, float>) {
      if (output_rotation_) return rotate_in_output_type(p, seq, in, out);
    }
    const std::int64_t pairs = rotation_.pairs();
    const auto n = p.size() * static_cast<std::size_t>(pairs);
    std::vector<float> c(n), s(n);
    rotation_table(p, seq, c, s);
    std::vector<std::int64_t> rows(p.size());
    std::iota(rows.begin(), rows.end(), std::int64_t{0});
    const kernel::rope_table_view<float> view{c, s, static_cast<std::int64_t>(p.size()), pairs};
    kernel::rope_apply<TQ, float>(rotation_, view, rows, in, out);
  }
  template <class T>
  void pe_t(std::span<const std::int64_t> p, std::span<T> out) const {
    base_->sinusoidal_pe(p, out);
    if (!hooks().pe_column) return;
    const auto& sp = std::get<spec::sinusoidal>(claimed_);
    const auto d = static_cast<std::size_t>(sp.d_model);
    std::vector<T> row(d);
    for (std::size_t r = 0; r < p.size(); ++r) {
      std::copy_n(out.begin() + static_cast<std::ptrdiff_t>(r * d), d, row.begin());
      for (std::size_t j = 0; j < d; ++j) {
        out[r * d + j] = row[static_cast<std::size_t>(hooks().pe_column(sp, std::int64_t(j)))];
      }
    }
  }
  template <class T>
  void slopes_t(std::span<T> out) const {
    if (!hooks().slopes) return base_->alibi_slopes(out);
    const auto m = slopes_f32();
    for (std::size_t h = 0; h < m.size(); ++h) out[h] = from_f<T>(m[h]);
  }
  template <class T>
  void bias_t(std::span<const std::int64_t> q, std::span<const std::int64_t> k,
              std::span<T> out) const {
    const auto m = slopes_f32();
    std::size_t idx = 0;
    for (float mh : m) {
      for (std::int64_t a : q) {
        for (std::int64_t b : k) {
          const std::int64_t dist = hooks().bias_sign ? a - b : b - a;
          out[idx++] = from_f<T>(mh * static_cast<float>(dist));
        }
      }
    }
  }

  void t5_buckets(std::span<const std::int64_t> r, std::span<std::int64_t> out) const override {
    if (!std::holds_alternative<spec::t5>(claimed_)) unsupported(output::t5_buckets);
    base_->t5_buckets(r, out);
    if (!hooks().bucket) return;
    const auto& s = std::get<spec::t5>(claimed_);
    for (std::size_t i = 0; i < r.size(); ++i) out[i] = hooks().bucket(s, r[i], out[i]);
  }

 private:
  const mutant_hooks& hooks() const { return info_.hooks; }

  // The sequence length the mutant plans with.
  std::optional<std::int64_t> length(std::optional<std::int64_t> seq) const {
    if (!hooks().sequence_length) return seq;
    return hooks().sequence_length(std::get<spec::rope>(claimed_), seq);
  }

  float base_magnitude(std::optional<std::int64_t> seq) const {
    return static_cast<float>(base_->attention_factor(length(seq)));
  }
  float magnitude(std::optional<std::int64_t> seq) const {
    const float m = base_magnitude(seq);
    return hooks().magnitude ? hooks().magnitude(std::get<spec::rope>(claimed_), m) : m;
  }

  // transformers' apply_rotary_pos_emb in the model dtype: the table cast to TQ, then every
  // product and the sum rounded to TQ (each op computed in float, as PyTorch's 16-bit ops are).
  template <class TQ>
  void rotate_in_output_type(std::span<const std::int64_t> p, std::optional<std::int64_t> seq,
                             kernel::heads_view<const TQ> in, kernel::heads_view<TQ> out) const {
    const std::int64_t pairs = rotation_.pairs(), D = rotation_.head_dim;
    const auto n = p.size() * static_cast<std::size_t>(pairs);
    std::vector<float> c(n), s(n);
    rotation_table(p, seq, c, s);
    auto r16 = [](float v) { return static_cast<float>(TQ(v)); };
    std::vector<float> x(static_cast<std::size_t>(D));
    for (std::int64_t t = 0; t < in.tokens; ++t) {
      for (std::int64_t h = 0; h < in.heads; ++h) {
        const auto base = static_cast<std::size_t>((t * in.heads + h) * D);
        for (std::size_t j = 0; j < x.size(); ++j) x[j] = static_cast<float>(in.data[base + j]);
        for (std::size_t j = 0; j < x.size(); ++j) out.data[base + j] = TQ(x[j]);
        for (std::int64_t i = 0; i < pairs; ++i) {
          const auto e = static_cast<std::size_t>(t * pairs + i);
          const float ct = r16(c[e]), st = r16(s[e]);
          const auto [a, b] = spec::pair_dims(rotation_, i);
          const float x0 = x[static_cast<std::size_t>(a)], x1 = x[static_cast<std::size_t>(b)];
          out.data[base + static_cast<std::size_t>(a)] = TQ(r16(x0 * ct) - r16(x1 * st));
          out.data[base + static_cast<std::size_t>(b)] = TQ(r16(x1 * ct) + r16(x0 * st));
        }
      }
    }
  }

  // The fp32 table (what the hf recipe stores before the cast to the output type).
  void table_f32(std::span<const std::int64_t> p, std::optional<std::int64_t> seq,
                 std::span<float> c, std::span<float> s) const {
    const bool restate = hooks().restates_table() || own_frequencies() ||
                         (hooks().magnitude && base_strategy_ == kernel::strategy::hf);
    if (!restate) {
      base_->rope_table(p, length(seq), c, s);
      if (hooks().magnitude) {  // another magnitude on the base's table
        const float mb = base_magnitude(seq);
        const float ratio = mb != 0 ? magnitude(seq) / mb : 1.0f;
        for (float& v : c) v *= ratio;
        for (float& v : s) v *= ratio;
      }
    } else {
      const std::vector<float> f = inv_freq(seq);
      const float m = magnitude(seq);
      const std::size_t P = f.size();
      for (std::size_t r = 0; r < p.size(); ++r) {
        const float pos = hooks().position ? hooks().position(p[r]) : static_cast<float>(p[r]);
        for (std::size_t i = 0; i < P; ++i) {
          float angle = pos * f[i];
          if (hooks().angle) angle = hooks().angle(angle);
          const float ct = hooks().trig ? hooks().trig(angle, false) : std::cos(angle);
          const float st = hooks().trig ? hooks().trig(angle, true) : std::sin(angle);
          c[r * P + i] = ct * m;
          s[r * P + i] = st * m;
        }
      }
    }
    if (hooks().table) hooks().table(c, s);
  }

  std::vector<float> slopes_f32() const {
    if (!std::holds_alternative<spec::alibi>(claimed_)) unsupported(output::alibi_bias);
    const auto& a = std::get<spec::alibi>(claimed_);
    std::vector<float> m(static_cast<std::size_t>(a.num_heads));
    base_->alibi_slopes(std::span<float>(m));
    if (hooks().slopes) hooks().slopes(a, m);
    return m;
  }

  /// Whether the pipeline takes the caller's frequencies (mutant_options::inv_freq).
  bool own_frequencies() const {
    return !freq_override_.empty() && !hooks().plan && !hooks().sequence_length &&
           base_strategy_ == kernel::strategy::hf &&
           freq_override_.size() == base_->inv_freq(std::nullopt).size();
  }

  const mutant_info& info_;
  spec::encoding claimed_;
  kernel::strategy base_strategy_;
  bool output_rotation_ = false;
  spec::rope rotation_;  // the spec the rotation is applied with
  std::unique_ptr<implementation> base_;
  std::unique_ptr<implementation> rotation_kernel_;  // the rotation spec's own table
  std::vector<float> freq_override_;                 // mutant_options::inv_freq
};

}  // namespace

spec::encoding planned_spec(const mutant_info& m, const spec::encoding& e,
                            const mutant_options& o) {
  spec::encoding plan = e;
  if (m.hooks.plan) m.hooks.plan(plan);
  if (m.hooks.implied_theta && o.rope_theta) std::get<spec::rope>(plan).rope_theta = *o.rope_theta;
  return plan;
}

bool mutant_replays_on(const mutant_info& m, kernel::strategy base) {
  return base == kernel::strategy::hf || !m.hooks.restates_table();
}

std::unique_ptr<implementation> make_mutant(std::string_view id, const spec::encoding& e,
                                            const mutant_options& o) {
  return std::make_unique<mutant>(find_mutant(id), e, o);
}

std::unique_ptr<implementation> make_control(const spec::encoding& e, const mutant_options& o) {
  // The restated table with no bug: the position operand is float(p), as in the hf recipe.
  static const mutant_info kControl = {
      "control",
      "any",
      "no bug: the mutants' own pipelines (hf recipe restated)",
      "",
      [](const spec::encoding&) { return true; },
      {.position = [](std::int64_t p) { return static_cast<float>(p); }}};
  // On ggml's pipeline the control is the ggml kernel itself (no restated table).
  static const mutant_info kGgmlControl = {
      "control", "any", "no bug: the ggml pipeline", "", [](const spec::encoding&) { return true; },
      {}};
  const bool ggml = o.base == kernel::strategy::ggml;
  return std::make_unique<mutant>(ggml ? kGgmlControl : kControl, e, o);
}

}  // namespace pev::impl
