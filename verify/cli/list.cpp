// `pev list`: encodings, rope types, layouts, recipes, strategies, dtypes and formats.

#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "commands.h"
#include "pev/ref/recipe.h"

namespace pev::cli {

command add_list(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("list", "List encodings, parameters, recipes, dtypes and formats");
  return {
      cmd, []() -> int {
        std::string s;
        s += "encodings (SPEC family[:key=value,...]):\n";
        s += "  sinusoidal  d_model, base=10000, layout=interleaved|blocked, freq_shift=1 "
             "(blocked)\n";
        s += "  learned     num_positions, d_model, target_positions=0, align_corners=true, "
             "table=FILE.npy|.safetensors, seed=0\n";
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
        s += "rope types:\n";
        s += "  default linear ntk dynamic yarn llama3 longrope proportional\n";
        s += "recipes (reference levels):\n";
        for (const ref::recipe* r : ref::all_recipes()) {
          s += fmt::format("  {:<6} {}\n", r->name, r->description);
        }
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
