#include "pev/ref/recipe.h"

#include <array>
#include <string>

#include "pev/core/error.h"
#include "pev/core/names.h"
#include "pev/scalar/round.h"

namespace pev::ref {

real round(rounding f, const real& x) {
  if (!f) return x;
  return visit_float(*f,
                     [&](auto tag) { return to_real(round_to<typename decltype(tag)::type>(x)); });
}

namespace {

recipe make_exact() {
  recipe r;
  r.name = "exact";
  r.description = "the mathematical definition: no rounding anywhere (reference level R1)";
  r.rope = rope_points{};
  r.sinusoidal_interleaved = sinusoidal_points{};
  r.sinusoidal_blocked = sinusoidal_points{};
  r.alibi = alibi_points{};
  r.t5 = rounding{};  // engaged: exact arithmetic
  r.learned = rounding{};
  return r;
}

recipe make_hf() {
  recipe r;
  r.name = "hf";
  r.description =
      "Hugging Face transformers: fp32 inv_freq (fp32 pow, reciprocal, scaling), host scalars in "
      "double, fp32 positions and product p*theta, cos/sin rounded to fp32, fp32 attention scaling";
  r.rope = rope_points{frequency_method::power,
                       dtype::fp64,
                       dtype::fp32,
                       dtype::fp32,
                       dtype::fp32,
                       dtype::fp32,
                       dtype::fp32};
  // DistilBERT/XLM create_sinusoidal_embeddings: NumPy float64, pos / 10000^(2*(j//2)/dim).
  r.sinusoidal_interleaved =
      sinusoidal_points{dtype::fp64, dtype::fp64, dtype::fp64, dtype::fp64, /*divide=*/true};
  // fairseq SinusoidalPositionalEmbedding.get_embedding: fp32 exp(arange * -log(base)/(h-1)).
  r.sinusoidal_blocked =
      sinusoidal_points{dtype::fp32, dtype::fp32, dtype::fp32, dtype::fp32, /*divide=*/false};
  // BLOOM build_alibi_tensor: base = 2^(-8/P) in double, stored fp32, torch.pow(base, h) in fp32.
  r.alibi = alibi_points{dtype::fp64, dtype::fp32};
  r.t5 = dtype::fp32;
  r.learned = dtype::fp32;
  return r;
}

recipe make_ggml() {
  recipe r;
  r.name = "ggml";
  r.description =
      "llama.cpp CPU rope: fp32 theta recurrence theta_i = theta_{i-1}*powf(base,-2/n_dims) from "
      "float(p), fp32 freq_scale/freq_factors/YaRN angle mix (no FMA), logf corr dims, cos/sin "
      "rounded to fp32 then times the fp32 mscale";
  r.rope = rope_points{frequency_method::recurrence,
                       dtype::fp32,
                       dtype::fp32,
                       dtype::fp32,
                       dtype::fp32,
                       dtype::fp32,
                       dtype::fp32};
  return r;
}

}  // namespace

const recipe& exact_recipe() {
  static const recipe r = make_exact();
  return r;
}
const recipe& hf_recipe() {
  static const recipe r = make_hf();
  return r;
}
const recipe& ggml_recipe() {
  static const recipe r = make_ggml();
  return r;
}

std::span<const recipe* const> all_recipes() {
  static const std::array<const recipe*, 3> all = {&exact_recipe(), &hf_recipe(), &ggml_recipe()};
  return all;
}

const recipe& find_recipe(std::string_view name) {
  std::string names;
  for (const recipe* r : all_recipes()) {
    if (r->name == name) return *r;
    names += names.empty() ? "" : ", ";
    names += r->name;
  }
  throw error("--recipe: unknown recipe " + quoted_text(name) + " (known: " + names + ")");
}

}  // namespace pev::ref
