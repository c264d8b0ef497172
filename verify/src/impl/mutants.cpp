// The mutant catalogue (mutants.h). Every mutant is pev's hf pipeline with exactly one bug: a
// wrong spec handed to the correct kernel (layout, truncate, lists, lengths), a perturbed
// frequency vector, position or angle in the hf table recipe (fp32 position × fp32 frequency,
// cosf/sinf, × m, cast), a perturbed table feeding pev's correct rotation, or a wrong formula for
// relative encodings. Each bug is its entry's hooks; one class applies them. Without its bug each
// mutant is the hf pipeline (tests/properties checks that the bug-free path passes every property,
// so a failure is the bug's).

#include "pev/impl/mutants.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <numeric>
#include <string>
#include <variant>
#include <vector>

#include "pev/core/error.h"
#include "pev/core/names.h"
#include "pev/core/real.h"
#include "pev/kernel/apply.h"
#include "pev/kernel/fast_math.h"
#include "pev/kernel/rope.h"
#include "pev/ref/recipe.h"
#include "pev/ref/relative.h"
#include "pev/ref/rope.h"

namespace pev::impl {
namespace {

const spec::rope* rope_of(const spec::encoding& e) { return std::get_if<spec::rope>(&e); }

bool any_rope(const spec::encoding& e) { return rope_of(e) != nullptr; }
bool rope_two_pairs(const spec::encoding& e) {
  const auto* r = rope_of(e);
  return r && r->pairs() >= 2;
}
bool rope_default(const spec::encoding& e) {
  const auto* r = rope_of(e);
  return r && r->type == spec::rope_type::default_ && r->freq_scale == 1.0 && r->pairs() >= 2;
}
// Exponent i/d where head_dim = 2·rotary_dim is rotary-freq-over-head-dim's formula (2i/head_dim):
// one mistake, named by the config's own widths.
bool rope_default_exponent(const spec::encoding& e) {
  const auto* r = rope_of(e);
  return rope_default(e) && r->head_dim != 2 * r->rotary_dim;
}

double hf_attention(const spec::encoding& e) {
  return make_builtin(e, kernel::strategy::hf)->attention_factor(std::nullopt);
}
bool rope_m_not_one(const spec::encoding& e) {
  const auto* r = rope_of(e);
  return r && (r->type == spec::rope_type::yarn || r->type == spec::rope_type::longrope) &&
         hf_attention(e) != 1.0;
}

bool yarn_truncate_matters(const spec::encoding& e) {
  const auto* r = rope_of(e);
  if (!r || r->type != spec::rope_type::yarn) return false;
  const auto range = ref::yarn_correction_range(*r);
  const double lo = range.low_raw.convert_to<double>(), hi = range.high_raw.convert_to<double>();
  const double half = static_cast<double>(r->pairs());
  // Only a non-integer corner inside the pairs' range moves a ramp.
  return (lo > 0 && lo < half && lo != std::floor(lo)) ||
         (hi > 0 && hi < half && hi != std::ceil(hi));
}

// YaRN's correction range in the hf kernel's doubles (find_correction_range).
std::pair<double, double> yarn_range(const spec::rope& s) {
  const auto r = kernel::hf_yarn_correction_range(s);
  return {r.low, r.high};
}

bool yarn_clamp_matters(const spec::encoding& e) {
  const auto* r = rope_of(e);
  if (!r || r->type != spec::rope_type::yarn) return false;
  const auto [low, high] = yarn_range(*r);
  const auto last = static_cast<double>(r->pairs() - 1);
  return high > last && low < last;
}

bool yarn_mscale_matters(const spec::encoding& e) {
  const auto* r = rope_of(e);
  if (!r || r->type != spec::rope_type::yarn || r->attention_factor) return false;
  if (!r->mscale || *r->mscale == 0 || !r->mscale_all_dim || *r->mscale_all_dim == 0) return false;
  spec::rope plain = *r;
  plain.mscale.reset();
  plain.mscale_all_dim.reset();
  return hf_attention(e) != hf_attention(plain);
}

bool longrope_lists_differ(const spec::encoding& e) {
  const auto* r = rope_of(e);
  return r && r->type == spec::rope_type::longrope && r->short_factor != r->long_factor;
}

bool dynamic_scaled(const spec::encoding& e) {
  const auto* r = rope_of(e);
  return r && r->type == spec::rope_type::dynamic && r->factor > 1;
}

// llama3's band of a wavelength: 0 high-frequency (kept), 1 blended, 2 low-frequency (/f).
int llama3_band(const spec::rope& s, float wl) {
  const auto Lo = static_cast<double>(s.original_max_position_embeddings);
  const auto low_wl = static_cast<float>(Lo / s.low_freq_factor);
  const auto high_wl = static_cast<float>(Lo / s.high_freq_factor);
  if (wl < high_wl) return 0;
  if (wl > low_wl) return 2;
  return 1;
}

std::vector<float> default_inv_freq(const spec::rope& s) {
  const spec::rope plain = plain_rope(s);
  return make_builtin(plain, kernel::strategy::hf)->inv_freq(std::nullopt);
}

constexpr float kTwoPi = static_cast<float>(2 * std::numbers::pi);

bool llama3_edges(const spec::encoding& e) {
  const auto* r = rope_of(e);
  if (!r || r->type != spec::rope_type::llama3 || r->factor == 1.0) return false;
  const auto f = default_inv_freq(*r);
  for (std::size_t i = 0; i + 1 < f.size(); ++i) {
    if (llama3_band(*r, kTwoPi / f[i]) != llama3_band(*r, kTwoPi / f[i + 1])) return true;
  }
  return false;
}

bool ntk_scaled(const spec::encoding& e) {
  const auto* r = rope_of(e);
  return r && r->type == spec::rope_type::ntk && r->factor > 1;
}

std::int64_t proportional_rotating(const spec::rope& s) {
  return static_cast<std::int64_t>(std::floor(s.partial_rotary_factor * double(s.head_dim) / 2.0));
}

bool proportional_tail(const spec::encoding& e) {
  const auto* r = rope_of(e);
  return r && r->type == spec::rope_type::proportional && proportional_rotating(*r) < r->pairs();
}

bool partial_rotary(const spec::encoding& e) {
  const auto* r = rope_of(e);
  // Types with per-pair lists (longrope) have no frequencies for the extra dims to misuse.
  return r && r->type != spec::rope_type::proportional && r->type != spec::rope_type::longrope &&
         r->rotary_dim < r->head_dim;
}

// Partial rotary whose frequencies are one formula over the rotary width (θ^(−2i/d), scaled or
// not): the width can be mistaken. Dynamic NTK's depend on the length too; lists have no formula.
bool partial_rotary_formula(const spec::encoding& e) {
  // longrope too: its factor lists have rotary_dim/2 entries, and the mistake is in the base's
  // exponent (frequencies_over_head_dim).
  const auto* r = rope_of(e);
  return r && r->type != spec::rope_type::proportional && r->type != spec::rope_type::ggml &&
         r->rotary_dim < r->head_dim && r->pairs() >= 2;
}

bool alibi_non_pow2(const spec::encoding& e) {
  const auto* a = std::get_if<spec::alibi>(&e);
  return a && !std::has_single_bit(static_cast<std::uint64_t>(a->num_heads));
}
bool any_alibi(const spec::encoding& e) { return std::holds_alternative<spec::alibi>(e); }

// T5 bucket with a float64 log branch (the same formula as transformers' fp32 one).
std::int64_t t5_bucket_f64(const spec::t5& s, std::int64_t r) {
  std::int64_t nb = s.num_buckets, offset = 0, n = 0;
  if (s.bidirectional) {
    nb /= 2;
    if (r > 0) offset = nb;
    n = r < 0 ? -r : r;
  } else {
    n = r < 0 ? -r : 0;
  }
  const std::int64_t e = nb / 2;
  if (n < e) return offset + n;
  const double scaled = std::log(static_cast<double>(n) / static_cast<double>(e)) /
                        std::log(static_cast<double>(s.max_distance) / static_cast<double>(e)) *
                        static_cast<double>(nb - e);
  if (scaled >= static_cast<double>(nb)) return offset + nb - 1;
  return offset + std::min(e + static_cast<std::int64_t>(std::trunc(scaled)), nb - 1);
}

// Distances where a T5 bucket could differ: both signs up to 4·max_distance.
std::vector<std::int64_t> t5_scan(const spec::t5& s) {
  std::vector<std::int64_t> r;
  for (std::int64_t v = -4 * s.max_distance; v <= 4 * s.max_distance; ++v) r.push_back(v);
  return r;
}

bool t5_f64_differs(const spec::encoding& e) {
  const auto* t = std::get_if<spec::t5>(&e);
  if (!t) return false;
  const auto r = t5_scan(*t);
  std::vector<std::int64_t> hf(r.size());
  make_builtin(e, kernel::strategy::hf)->t5_buckets(r, hf);
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (t5_bucket_f64(*t, r[i]) != hf[i]) return true;
  }
  return false;
}

bool t5_bidirectional(const spec::encoding& e) {
  const auto* t = std::get_if<spec::t5>(&e);
  return t && t->bidirectional;
}
bool t5_unidirectional(const spec::encoding& e) {
  const auto* t = std::get_if<spec::t5>(&e);
  return t && !t->bidirectional;
}

bool sinusoidal_d4(const spec::encoding& e) {
  const auto* s = std::get_if<spec::sinusoidal>(&e);
  return s && s->d_model >= 4;
}
bool sinusoidal_interleaved(const spec::encoding& e) {
  const auto* s = std::get_if<spec::sinusoidal>(&e);
  return s && s->layout == spec::sinusoidal_layout::interleaved && s->d_model >= 2;
}

// ---- The bugs, as hooks (mutants.h) -------------------------------------------------------------

// Rounds a float's significand to `bits` bits (with the implicit one), to nearest even.
float round_significand(float v, int bits) {
  const auto u = std::bit_cast<std::uint32_t>(v);
  const int drop = 24 - bits;
  const std::uint32_t half = 1u << (drop - 1);
  const std::uint32_t mask = (1u << drop) - 1;
  const std::uint32_t rest = u & mask;
  std::uint32_t r = u & ~mask;
  if (rest > half || (rest == half && ((u >> drop) & 1u))) r += 1u << drop;
  return std::bit_cast<float>(r);
}

spec::rope& rope_in(spec::encoding& e) { return std::get<spec::rope>(e); }

void swap_layout(spec::rope& r) {
  r.layout = r.layout == spec::rope_layout::neox ? spec::rope_layout::interleaved
                                                 : spec::rope_layout::neox;
}

void full_rotary(spec::rope& r) {
  r.partial_rotary_factor = 1.0;
  r.rotary_dim = r.head_dim;
}

void inv_freq_bf16(const spec::rope&, std::vector<float>& f) {
  for (float& v : f) v = static_cast<float>(bfloat16(v));
}

void exponent_i_over_d(const spec::rope& s, std::vector<float>& f) {
  for (std::size_t i = 0; i < f.size(); ++i) {
    const float x = static_cast<float>(i) / static_cast<float>(s.rotary_dim);
    f[i] = 1.0f / std::pow(static_cast<float>(s.rope_theta), x);
  }
}

void yarn_ramp_clamp_half(const spec::rope& s, std::vector<float>& f) {
  auto [low, high] = yarn_range(s);
  high = std::min(high, static_cast<double>(s.pairs() - 1));  // the bug
  if (low == high) high += 0.001;
  const auto fl = static_cast<float>(low), width = static_cast<float>(high - low);
  const auto b = static_cast<float>(s.rope_theta), fac = static_cast<float>(s.factor);
  for (std::size_t j = 0; j < f.size(); ++j) {
    const float P = std::pow(b, static_cast<float>(2 * j) / static_cast<float>(s.rotary_dim));
    const float ramp = std::clamp((static_cast<float>(j) - fl) / width, 0.0f, 1.0f);
    const float gamma = 1.0f - ramp;
    f[j] = 1.0f / (fac * P) * (1.0f - gamma) + 1.0f / P * gamma;
  }
}

void llama3_band_edge(const spec::rope& s, std::vector<float>& f) {
  const auto plain = default_inv_freq(s);
  const auto Lo = static_cast<float>(s.original_max_position_embeddings);
  const auto fac = static_cast<float>(s.factor);
  for (std::size_t i = 0; i < f.size(); ++i) {
    const float wl = kTwoPi / plain[i];
    const float wl_next = kTwoPi / plain[std::min(i + 1, f.size() - 1)];  // the bug
    const float th = plain[i];
    switch (llama3_band(s, wl_next)) {
      case 0:
        f[i] = th;
        break;
      case 2:
        f[i] = th / fac;
        break;
      default: {
        const float sm = (Lo / wl - static_cast<float>(s.low_freq_factor)) /
                         static_cast<float>(s.high_freq_factor - s.low_freq_factor);
        f[i] = (1.0f - sm) * th / fac + sm * th;
      }
    }
  }
}

// The slopes beyond the largest power of two P ≤ H: powers 1, 2, 3, … of 2^(−b/2P) (step 1) where
// the rule takes the odd ones, 1, 3, 5, … (step 2: every other slope of the 2P rule).
void alibi_extra_step_one(const spec::alibi& a, std::vector<float>& m) {
  const auto P = std::bit_floor(static_cast<std::uint64_t>(a.num_heads));
  for (std::size_t h = P; h < m.size(); ++h) {
    const auto k = static_cast<double>(h - P + 1);
    m[h] = static_cast<float>(std::pow(2.0, -a.max_bias * k / (2.0 * static_cast<double>(P))));
  }
}

// The frequencies of the first rotary_dim/2 pairs computed over the whole head: exponent
// 2i/head_dim where it is 2i/rotary_dim (the whole-head spec's own frequencies, truncated).
void frequencies_over_head_dim(const spec::rope& s, std::vector<float>& f) {
  if (s.stateful()) {
    // longrope's and dynamic NTK's frequencies depend on the sequence length, and longrope's
    // factor lists have rotary_dim/2 entries: the mistake's frequencies are the planned ones with
    // the base's exponent over head_dim, f_i·θ^(2i/rotary_dim − 2i/head_dim).
    const double rot = static_cast<double>(s.rotary_dim), hd = static_cast<double>(s.head_dim);
    for (std::size_t i = 0; i < f.size(); ++i) {
      const double e = 2.0 * static_cast<double>(i);
      f[i] =
          static_cast<float>(static_cast<double>(f[i]) * std::pow(s.rope_theta, e / rot - e / hd));
    }
    return;
  }
  spec::rope whole = s;
  full_rotary(whole);
  const std::vector<float> w = make_builtin(whole, kernel::strategy::hf)->inv_freq(std::nullopt);
  std::copy_n(w.begin(), std::min(w.size(), f.size()), f.begin());
}

void alibi_pow2_rule(const spec::alibi& a, std::vector<float>& m) {
  const auto H = static_cast<double>(a.num_heads);
  for (std::size_t h = 0; h < m.size(); ++h) {
    m[h] = static_cast<float>(std::pow(2.0, -a.max_bias * double(h + 1) / H));
  }
}

// The other direction's bucket, as transformers computes it (fp32 log): the decoder's for an
// encoder's config, or the encoder's for a decoder's.
std::int64_t t5_other_direction(const spec::t5& s, std::int64_t r, std::int64_t) {
  spec::t5 other = s;
  other.bidirectional = !s.bidirectional;
  return ref::t5_bucket(other, r, ref::hf_recipe());
}

std::int64_t t5_bidirectional_sign(const spec::t5& s, std::int64_t r, std::int64_t hf) {
  const std::int64_t half_nb = s.num_buckets / 2;
  if (r > 0) return hf - half_nb;
  if (r < 0) return hf + half_nb;
  return hf;
}

bool rope_scaled(const spec::encoding& e) {
  const auto* r = rope_of(e);
  // proportional's partial rotation is not a scaling plain RoPE can drop.
  return r && r->pairs() >= 2 && r->type != spec::rope_type::proportional &&
         ((r->type != spec::rope_type::default_ && r->factor != 1.0) || r->freq_scale != 1.0 ||
          (r->type == spec::rope_type::longrope &&
           r->short_factor != std::vector<double>(r->short_factor.size(), 1.0)));
}
bool ggml_scaled(const spec::encoding& e) {
  const auto* r = rope_of(e);
  return r && r->pairs() >= 2 &&
         ((r->type == spec::rope_type::linear && r->factor != 1.0) ||
          (r->type == spec::rope_type::default_ && r->freq_scale != 1.0));
}
bool yarn_scaled(const spec::encoding& e) {
  const auto* r = rope_of(e);
  return r && r->type == spec::rope_type::yarn && r->factor > 1.0 && r->pairs() >= 2;
}

/// The plain RoPE of a scaled spec: every scaling ignored.
void ignore_scaling(spec::encoding& e) { e = plain_rope(rope_in(e)); }

/// A commonly mistaken base: the field's two usual defaults, 10000 and 500000.
void wrong_theta(spec::encoding& e) {
  spec::rope& r = rope_in(e);
  r.rope_theta = r.rope_theta == 10000.0 ? 500000.0 : 10000.0;
}

/// ggml's freq_scale is 1/factor; the mistake passes factor (or its freq_scale inverted).
void invert_freq_scale(spec::encoding& e) {
  spec::rope& r = rope_in(e);
  if (r.type == spec::rope_type::linear) {
    r.factor = 1.0 / r.factor;
  } else {
    r.freq_scale = 1.0 / r.freq_scale;
  }
}

/// ggml with ext_factor 0: every pair interpolated (θ·freq_scale), and the attention factor as
/// passed (llama.cpp's attn_factor = m_HF/(1 + 0.1·ln f)), without the YaRN magnitude.
void yarn_ramp_off(spec::encoding& e) {
  spec::rope& r = rope_in(e);
  const double f = r.factor;
  r = plain_rope(r);
  r.type = spec::rope_type::linear;
  r.factor = f;
}
float yarn_attn_as_passed(const spec::rope& s, float) {
  const auto m = static_cast<float>(make_builtin(s, kernel::strategy::hf)->attention_factor({}));
  return m / (1.0f + 0.1f * static_cast<float>(std::log(s.factor)));
}

// MRoPE mistakes: another pair → stream map (docs/encodings.md §4.6, §10.2).
std::int64_t mrope_hw_swapped(const spec::rope& s, std::int64_t i) {
  const std::int64_t k = spec::mrope_stream(s, i);
  return k == 1 ? 2 : k == 2 ? 1 : k;
}
std::int64_t mrope_interleave_flipped(const spec::rope& s, std::int64_t i) {
  spec::rope other = s;
  other.mrope_interleaved = !s.mrope_interleaved;
  return spec::mrope_stream(other, i);
}
// Sections read as dims where they count pairs: each doubled (ggml accepts sections summing to
// at most head_dim; the sector is then the pair itself, and the last sections get no pairs).
std::int64_t mrope_sections_doubled(const spec::rope& s, std::int64_t i) {
  spec::rope other = s;
  for (std::int64_t& n : other.mrope_section) n *= 2;
  return spec::mrope_stream(other, i);
}
std::int64_t mrope_text_only(const spec::rope&, std::int64_t) { return 0; }

template <std::int64_t (*F)(const spec::rope&, std::int64_t)>
bool mrope_map_differs(const spec::encoding& e) {
  const auto* r = rope_of(e);
  if (!r || r->mrope_section.empty()) return false;
  for (std::int64_t i = 0; i < r->pairs(); ++i) {
    if (F(*r, i) != spec::mrope_stream(*r, i)) return true;
  }
  return false;
}

const mutant_info kCatalogue[] = {
    {"neox-as-interleaved",
     "rope",
     "NeoX (half-split) weights rotated with GPT-J interleaved pairs",
     "docs/encodings.md §4.2: the most common silent port error",
     rope_two_pairs,
     {.rotation = swap_layout}},
    {"sin-cos-swapped",
     "rope",
     "cos and sin tables swapped",
     "Megatron-LM PR #7465",
     any_rope,
     {.table =
          [](std::span<float> c, std::span<float> s) {
            for (std::size_t k = 0; k < c.size(); ++k) std::swap(c[k], s[k]);
          }}},
    {"position-off-by-one",
     "rope",
     "positions shifted by one (1-based arange / past length counted twice)",
     "a port's position ids (docs/encodings.md §10.1, item 11)",
     any_rope,
     {.position = [](std::int64_t p) { return static_cast<float>(p + 1); }}},
    {"exponent-i-over-d",
     "rope",
     "frequency exponent i/d instead of 2i/d",
     "a port's frequency formula (docs/encodings.md §10.1, item 11)",
     rope_default_exponent,
     {.frequencies = exponent_i_over_d}},
    {"inv-freq-bf16",
     "rope",
     "inv_freq buffer cast to bf16 (model.to(bf16))",
     "transformers #30709, #25681, sglang-jax#1472",
     rope_two_pairs,
     {.frequencies = inv_freq_bf16}},
    {"positions-bf16",
     "rope",
     "positions materialised in bf16 (arange under bf16 default dtype)",
     "transformers #28685, pytorch#137774",
     any_rope,
     {.position =
          [](std::int64_t p) { return static_cast<float>(bfloat16(static_cast<float>(p))); }}},
    {"positions-tf32",
     "rope",
     "position × frequency product with TF32 inputs (both rounded to 11 significant bits)",
     "transformers #48428, TensorRT-LLM#19532",
     any_rope,
     {.frequencies =
          [](const spec::rope&, std::vector<float>& f) {
            for (float& v : f) v = round_significand(v, 11);
          },
      .position = [](std::int64_t p) { return round_significand(static_cast<float>(p), 11); }}},
    {"positions-fp16",
     "rope",
     "positions in fp16: aliasing past 2048, overflow to inf past 65504",
     "Megatron-LM#535, mlx-lm PR #1076",
     any_rope,
     {.position = [](std::int64_t p) { return static_cast<float>(half(static_cast<float>(p))); }}},
    {"angle-bf16",
     "rope",
     "angle product p·θ rounded to bf16 (autocast)",
     "transformers PR #29285",
     any_rope,
     {.angle = [](float a) { return static_cast<float>(bfloat16(a)); }}},
    {"rotate-inverse",
     "rope",
     "backward rotation (sin negated) used for the forward pass",
     "ggml ROPE_BACK / FA CONJUGATE mix-ups",
     any_rope,
     {.backward = true}},
    {"yarn-other-truncate",
     "rope",
     "YaRN correction range with the other `truncate` setting",
     "gpt-oss truncate:false, vLLM #27722, keras-hub#2981",
     yarn_truncate_matters,
     {.plan = [](spec::encoding& e) { rope_in(e).truncate = !rope_in(e).truncate; }}},
    {"yarn-ramp-clamp-half",
     "rope",
     "YaRN ramp high end clamped at dim/2−1 instead of dim−1",
     "keras-hub#2981",
     yarn_clamp_matters,
     {.frequencies = yarn_ramp_clamp_half}},
    {"attention-factor-missing",
     "rope",
     "attention factor (YaRN mscale / LongRoPE) not applied",
     "vLLM #46280, #48351",
     rope_m_not_one,
     {.magnitude = [](const spec::rope&, float) { return 1.0f; }}},
    {"attention-factor-twice",
     "rope",
     "attention factor applied twice (table and again on q/k)",
     "TensorRT-LLM PR #16378",
     rope_m_not_one,
     {.magnitude = [](const spec::rope&, float m) { return m * m; }}},
    {"yarn-mscale-ignored",
     "rope",
     "YaRN mscale / mscale_all_dim keys ignored (get_mscale(f) used)",
     "vLLM #48621, Megatron-LM#1429",
     yarn_mscale_matters,
     {.plan =
          [](spec::encoding& e) {
            rope_in(e).mscale.reset();
            rope_in(e).mscale_all_dim.reset();
          }}},
    {"longrope-swapped",
     "rope",
     "LongRoPE short/long factor lists swapped",
     "llama.cpp #24823, mlc-llm#3375",
     longrope_lists_differ,
     {.plan =
          [](spec::encoding& e) { std::swap(rope_in(e).short_factor, rope_in(e).long_factor); }}},
    {"dynamic-wrong-length",
     "rope",
     "dynamic NTK evaluated at the maximal length L·f instead of the current sequence length",
     "vLLM #3488, #41236",
     dynamic_scaled,
     {.sequence_length =
          [](const spec::rope& r, std::optional<std::int64_t>) {
            return std::optional<std::int64_t>(static_cast<std::int64_t>(
                static_cast<double>(r.max_position_embeddings) * r.factor));
          }}},
    {"dynamic-length-off-by-one",
     "rope",
     "dynamic NTK evaluated at the largest position instead of the sequence length (max + 1)",
     "engines taking max(position_ids) for transformers' max(position_ids) + 1",
     dynamic_scaled,
     {.sequence_length =
          [](const spec::rope&, std::optional<std::int64_t> seq) {
            return seq ? std::optional<std::int64_t>(*seq - 1) : seq;
          }}},
    {"llama3-band-edge",
     "rope",
     "Llama-3 band chosen from the neighbouring pair's wavelength (off by one)",
     "a port's band test (docs/encodings.md §10.1, item 11)",
     llama3_edges,
     {.frequencies = llama3_band_edge}},
    {"ntk-missing-exponent",
     "rope",
     "NTK-aware base b·f instead of b·f^(d/(d−2))",
     "docs/encodings.md §5.4",
     ntk_scaled,
     {.plan =
          [](spec::encoding& e) {
            spec::rope& r = rope_in(e);
            r.type = spec::rope_type::default_;
            r.rope_theta *= r.factor;
            r.factor = 1.0;
          }}},
    {"proportional-tail-rotates",
     "rope",
     "proportional RoPE rotating the NoPE tail pairs",
     "docs/encodings.md §5.11",
     proportional_tail,
     {.plan =
          [](spec::encoding& e) {
            spec::rope& r = rope_in(e);
            r.type = spec::rope_type::linear;
            full_rotary(r);
          }}},
    {"partial-rotary-full",
     "rope",
     "partial rotary rotating the pass-through dims too",
     "docs/encodings.md §4.3 (partial rotary); mlx-lm PR #1698 (GLM rotated over head_dim)",
     partial_rotary,
     {.rotation = full_rotary, .rotation_table = true}},
    {"rotary-freq-over-head-dim",
     "rope",
     "partial rotary: rotary_dim dims rotated, with frequencies over head_dim (exponent "
     "2i/head_dim instead of 2i/rotary_dim)",
     "vLLM #16904 (GLM's rotary_dim halved after its cache was built), #43676 (GLM-4.7)",
     partial_rotary_formula,
     {.frequencies = frequencies_over_head_dim}},
    {"alibi-pow2-rule",
     "alibi",
     "ALiBi slopes 2^(−8h/H) used for a head count that is not a power of two",
     "ofirpress/attention_with_linear_biases",
     alibi_non_pow2,
     {.slopes = alibi_pow2_rule}},
    {"alibi-extra-step-one",
     "alibi",
     "ALiBi slopes beyond the largest power of two P < H taken with step 1 (powers 1, 2, 3, … "
     "of 2^(−8/2P)) instead of step 2 (1, 3, 5, …)",
     "a port of BLOOM's build_alibi_tensor: arange(1, 1 + 2n, 2) written arange(1, 1 + n)",
     alibi_non_pow2,
     {.slopes = alibi_extra_step_one}},
    {"alibi-bias-sign",
     "alibi",
     "ALiBi bias m·(i − j) instead of m·(j − i)",
     "BLOOM/MPT ports",
     any_alibi,
     {.bias_sign = true}},
    {"t5-float64-log",
     "t5",
     "T5 bucket log branch in float64 instead of transformers' float32",
     "docs/encodings.md §3.2",
     t5_f64_differs,
     {.bucket = [](const spec::t5& s, std::int64_t r,
                   std::int64_t) { return t5_bucket_f64(s, r); }}},
    {"t5-bidirectional-sign",
     "t5",
     "T5 bidirectional offset added for keys before the query",
     "docs/encodings.md §3.2",
     t5_bidirectional,
     {.bucket = t5_bidirectional_sign}},
    {"t5-unidirectional-buckets",
     "t5",
     "T5 decoder buckets (bidirectional=false) where the config's are the encoder's "
     "(bidirectional=true)",
     "transformers T5Attention: is_decoder decides the direction, not the config",
     t5_bidirectional,
     {.bucket = t5_other_direction}},
    {"t5-bidirectional-buckets",
     "t5",
     "T5 encoder buckets (bidirectional=true) where the config's are the decoder's "
     "(bidirectional=false)",
     "transformers T5Attention: is_decoder decides the direction, not the config",
     t5_unidirectional,
     {.bucket = t5_other_direction}},
    {"sinusoidal-layout-swapped",
     "sinusoidal",
     "sinusoidal blocked [sin|cos] and interleaved layouts confused",
     "fairseq vs tensor2tensor vs the paper",
     sinusoidal_d4,
     {.plan =
          [](spec::encoding& e) {
            auto& s = std::get<spec::sinusoidal>(e);
            s.layout = s.layout == spec::sinusoidal_layout::interleaved
                           ? spec::sinusoidal_layout::blocked
                           : spec::sinusoidal_layout::interleaved;
          }}},
    {"sinusoidal-cos-first",
     "sinusoidal",
     "sinusoidal pairs written (cos, sin) instead of (sin, cos)",
     "diffusers flip_sin_to_cos",
     sinusoidal_interleaved,
     {.pe_column = [](const spec::sinusoidal& s,
                      std::int64_t j) { return j + 1 < s.d_model || j % 2 == 1 ? j ^ 1 : j; }}},
    {"autocast-bf16",
     "rope",
     "the angle computed under bf16 autocast: bf16(bf16(inv_freq)·bf16(p)), cos/sin in bf16, "
     "then times the attention factor in bf16",
     "transformers PR #29285 (before it)",
     rope_two_pairs,
     {.frequencies = inv_freq_bf16,
      .position =
          [](std::int64_t p) { return static_cast<float>(bfloat16(static_cast<float>(p))); },
      .angle = [](float a) { return static_cast<float>(bfloat16(a)); },
      // emb.cos() of a bf16 tensor is bf16; `* attention_scaling` rounds to bf16 again (the table
      // hook), which a factor ≠ 1 (YaRN, LongRoPE) makes a second rounding.
      .trig =
          [](float a, bool is_sin) {
            return static_cast<float>(bfloat16(is_sin ? std::sin(a) : std::cos(a)));
          },
      .table =
          [](std::span<float> c, std::span<float> s) {
            for (float& v : c) v = static_cast<float>(bfloat16(v));
            for (float& v : s) v = static_cast<float>(bfloat16(v));
          }}},
    {"fast-math-trig",
     "rope",
     "sin/cos by fast-math intrinsics (__sinf/__cosf, -use_fast_math): the angle reduced as "
     "RZ(θ·fl32(1/2π)), an error growing as 1.6e-7·|angle|",
     "CUDA -use_fast_math (custom RoPE kernels built with it); docs/numerics.md §5.5",
     rope_two_pairs,
     {.trig = kernel::fast_math_trig}},
    {"rope-theta-wrong",
     "rope",
     "rope_theta of another model (10000 for 500000, or back)",
     "a port's config (docs/encodings.md §10.1)",
     rope_two_pairs,
     {.plan = wrong_theta, .implied_theta = true}},
    {"scaling-ignored",
     "rope",
     "rope_scaling ignored: plain RoPE where the config scales",
     "unslothai/unsloth#6197, runtimes without rope_scaling",
     rope_scaled,
     {.plan = ignore_scaling}},
    {"dynamic-never-updated",
     "rope",
     "dynamic NTK never updated: the original inv_freq past max_position_embeddings",
     "transformers #25104, #25306",
     dynamic_scaled,
     {.sequence_length =
          [](const spec::rope& r, std::optional<std::int64_t>) {
            return std::optional<std::int64_t>(r.max_position_embeddings);
          }}},
    {"ggml-freq-scale-inverted",
     "rope",
     "ggml freq_scale given as the factor instead of 1/factor",
     "llama.cpp rope_freq_scale",
     ggml_scaled,
     {.plan = invert_freq_scale},
     kernel::strategy::ggml},
    {"ggml-yarn-ramp-off",
     "rope",
     "ggml YaRN with ext_factor 0: no ramp (every pair interpolated), no YaRN magnitude",
     "llama.cpp PR #2268",
     yarn_scaled,
     {.plan = yarn_ramp_off, .magnitude = yarn_attn_as_passed},
     kernel::strategy::ggml},
    {"ggml-yarn-ramp-off-attn-one",
     "rope",
     "ggml YaRN with ext_factor 0 and attn_factor reset to 1: no ramp, magnitude 1 (llama.cpp's "
     "call when ext_factor is 0)",
     "llama.cpp rope_yarn with ext_factor 0",
     yarn_scaled,
     {.plan = yarn_ramp_off, .magnitude = [](const spec::rope&, float) { return 1.0f; }},
     kernel::strategy::ggml},
    {"ggml-attn-factor-not-divided",
     "rope",
     "ggml attn_factor passed as transformers' attention factor (not divided by 1 + 0.1·ln f)",
     "llama.cpp PR #17945",
     yarn_scaled,
     {.magnitude =
          [](const spec::rope& s, float m) {
            return m * (1.0f + 0.1f * static_cast<float>(std::log(s.factor)));
          }},
     kernel::strategy::ggml},
    {"sin-negated",
     "rope",
     "the backward table (sin negated) stored for the forward pass",
     "ggml ROPE_BACK, FA CONJUGATE",
     any_rope,
     {.table =
          [](std::span<float>, std::span<float> s) {
            for (float& v : s) v = -v;
          }}},
    {"mrope-hw-swapped",
     "rope",
     "MRoPE height and width position streams swapped (sections applied in the wrong order)",
     "docs/encodings.md §4.6: section order t, h, w",
     mrope_map_differs<mrope_hw_swapped>,
     {.stream = mrope_hw_swapped}},
    {"mrope-interleave-flipped",
     "rope",
     "MRoPE sections consecutive where the model interleaves them (Qwen3-VL), or vice versa",
     "Qwen3-VL apply_interleaved_mrope, ggml IMROPE vs MROPE",
     mrope_map_differs<mrope_interleave_flipped>,
     {.stream = mrope_interleave_flipped}},
    {"mrope-sections-doubled",
     "rope",
     "MRoPE sections counted in dims instead of pairs (mrope_section doubled)",
     "transformers splits by mrope_section*2; ggml sections count pairs",
     mrope_map_differs<mrope_sections_doubled>,
     {.stream = mrope_sections_doubled}},
    {"mrope-text-positions",
     "rope",
     "MRoPE with the temporal (text) position stream used for every pair",
     "1-D position_ids passed to a multimodal rotary",
     mrope_map_differs<mrope_text_only>,
     {.stream = mrope_text_only}},
};

}  // namespace

std::span<const mutant_info> mutant_catalogue() { return kCatalogue; }

const mutant_info& find_mutant(std::string_view id) {
  std::string ids;
  for (const mutant_info& m : kCatalogue) {
    if (m.id == id) return m;
    ids += std::string(ids.empty() ? "" : ", ") + m.id;
  }
  throw error("unknown mutant " + quoted_text(id) + " (known: " + ids + ")");
}

}  // namespace pev::impl
