// `pev reference`: the arbitrary-precision reference of an encoding at given positions
// (docs/design.md §5.4); the values are pev::app's (values.h).

#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "pev/app/choices.h"
#include "pev/app/values.h"
#include "pev/core/error.h"
#include "pev/core/real.h"
#include "pev/ref/recipe.h"

namespace pev::cli {

command add_reference(CLI::App& app) {
  struct state {
    encoding_options o;
    std::string dtype = "exact";
    std::string recipe = "exact";
    unsigned precision = 0;
    std::string reference = "fast";
  };
  auto st = std::make_shared<state>();
  CLI::App* cmd = app.add_subcommand(
      "reference",
      "Arbitrary-precision reference values (MPFR) of an encoding at given positions.\n"
      "Shapes: --what table → [P, rot/2, 2] (m·cos, m·sin per pair; safetensors: cos, sin "
      "[P, rot/2]); inv_freq → [rot/2]; attention_factor → one number; pe → [P, d_model]; "
      "bias → ALiBi [H, P, P] (query × key positions); slopes → [H]; buckets → [P] for "
      "relative distances key − query. exact and fp64 are stored as float64 in npy/safetensors.");
  st->o.add_to(*cmd);
  cmd->add_option("--dtype", st->dtype,
                  "exact (MPFR value), fp64, fp32, fp16 or bf16: one correct rounding of the "
                  "reference to that format")
      ->capture_default_str();
  cmd->add_option("--recipe", st->recipe,
                  "exact (the mathematical definition), hf (transformers' fp32 pipeline) or ggml "
                  "(llama.cpp's fp32 recurrence): round only where the recipe rounds")
      ->capture_default_str();
  cmd->add_option("--reference", st->reference,
                  "fast or mpfr: how a RoPE table or sinusoidal PE in fp64/fp32/fp16/bf16 with the "
                  "exact recipe is computed. fast (the fast exact reference) gives the same bits "
                  "as mpfr, faster, streamed to the output one chunk at a time (RoPE tables with "
                  "mpfr too). --dtype exact, the hf/ggml recipes and other outputs use MPFR in "
                  "memory (at most 2^26 values a request)")
      ->capture_default_str();
  cmd->add_option(
      "--precision", st->precision,
      "MPFR precision in bits (default " + std::to_string(default_precision_bits()) + ")");
  return {cmd, [st]() -> int {
            if (st->precision) set_precision_bits(st->precision);
            st->o.check_ranges();
            const spec::encoding e = st->o.encoding();
            st->o.refuse_inputs_inside_out(e);
            app::output out = st->o.start_output(e, app::parse_out_dtype(st->dtype));
            out.recipe = st->recipe;
            out.precision_bits = precision_bits();
            const bool mpfr_reference = app::parse_mpfr_reference(st->reference);
            std::vector<std::int64_t> pos = st->o.positions_for(e, out.what);
            const app::out_format format = app::parse_out_format(st->o.format);
            app::write_reference(out, e, ref::find_recipe(st->recipe), pos, st->o.seq_len,
                                 mpfr_reference, format, st->o.out);
            return 0;
          }};
}

}  // namespace pev::cli
