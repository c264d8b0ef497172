// `pev list`: encodings, rope types, layouts, recipes, grades, strategies, dtypes and formats.

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "commands.h"
#include "pev/ref/recipe.h"
#include "pev/report/result.h"

namespace pev::cli {

command add_list(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("list", "List encodings, parameters, recipes, grades, dtypes and formats");
  return {
      cmd, []() -> int {
        std::string s;
        s += "encodings (SPEC family[:key=value,...]):\n";
        s += "  sinusoidal  d_model, base=10000, layout=interleaved|blocked, freq_shift=1 "
             "(blocked)\n";
        s += "  learned     num_positions, d_model, target_positions=0, align_corners=true, "
             "offset=0, table=FILE.npy|.safetensors, seed=0\n";
        s += "  alibi       num_heads, max_bias=8\n";
        s += "  t5          num_buckets=32, max_distance=128, bidirectional=true\n";
        s += "  shaw        max_relative_position\n";
        s += "  rope        head_dim, rope_theta=10000, rope_type=default, "
             "layout=neox|interleaved,\n"
             "              partial_rotary_factor=1 | rotary_dim, factor, freq_scale (default "
             "only),\n"
             "              max_position_embeddings, original_max_position_embeddings,\n"
             "              beta_fast=32, beta_slow=1, truncate=true, mscale, mscale_all_dim,\n"
             "              attention_factor, low_freq_factor, high_freq_factor,\n"
             "              short_factor=[...], long_factor=[...],\n"
             "              mrope_section=[t,h,w] (pairs; ggml: [t,h,w,e]), "
             "mrope_interleaved=false\n"
             "              (MRoPE: positions are [streams, T], one row per section)\n";
        s += "  ggml        head_dim, mode=normal|neox, n_dims=head_dim, freq_base=10000,\n"
             "              freq_scale=1, ext_factor=0, attn_factor=1, beta_fast=32, "
             "beta_slow=1,\n"
             "              n_ctx_orig=0, freq_factors=[...]|FILE (llama.cpp's ggml_rope_ext; "
             "strategies ggml, accurate)\n";
        s += "rope types:\n";
        s += "  default linear ntk dynamic yarn llama3 longrope proportional\n";
        s += "recipes (reference levels, `pev reference --recipe`):\n";
        for (const ref::recipe* r : ref::all_recipes()) {
          s += fmt::format("  {:<6} {}\n", r->name, r->description);
        }
        // Every grade of the ladder (docs/design.md §6.5), named as certificates name them.
        s += "grades (`pev certify`, best first; each implies the ones after it):\n";
        for (int g = 0; g <= static_cast<int>(report::grade::not_certified); ++g) {
          const auto grade = static_cast<report::grade>(g);
          const char* what = "";
          switch (grade) {
            case report::grade::correctly_rounded:
              what = "every value is the exact value rounded to the dtype";
              break;
            case report::grade::faithful:
              what = "every value within 1 ulp of the exact value";
              break;
            case report::grade::drift_free:
              what = "errors bounded independently of the position (no p*2^-24 growth)";
              break;
            case report::grade::recipe_hf:
              what = "within the error bound of transformers' fp32 recipe";
              break;
            case report::grade::recipe_ggml:
              what = "within the error bound of llama.cpp's fp32 recurrence";
              break;
            case report::grade::recipe_vllm:
              what = "within the bound of vLLM's cache (the hf table stored in fp16 or bf16)";
              break;
            case report::grade::not_certified:
              what = "none of the above";
              break;
          }
          s += fmt::format("  {:<18} {}\n", report::to_string(grade), what);
        }
        s += "claims (`pev certify --recipe`): exact (faithful or better), hf, ggml, vllm\n";
        s += "strategies (production kernels, `pev compute --strategy`):\n";
        s += "  hf          transformers' fp32 recipe (powf inv_freq, fp32 p*theta, cosf/sinf)\n";
        s += "  ggml        llama.cpp's fp32 theta recurrence (RoPE only)\n";
        s += "  table-fp16  hf math, cache stored in fp16\n";
        s += "  table-bf16  hf math, cache stored in bf16\n";
        s += "  accurate    exact frequencies and angle reduction: error independent of "
             "position\n";
        s += "outputs (--what):\n";
        s += "  rope: table, inv_freq, attention_factor; sinusoidal, learned: pe; alibi: bias, "
             "slopes; t5, shaw: buckets\n";
        s += "dtypes: exact fp64 fp32 fp16 bf16\n";
        s += "formats: text csv json npy safetensors\n";
        std::cout << s;
        return 0;
      }};
}

}  // namespace pev::cli
