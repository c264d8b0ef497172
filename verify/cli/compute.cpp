// `pev compute --strategy NAME`: a built-in kernel's output in the shapes of `pev reference`
// (docs/design.md §5.4), so that strategies can be dumped and compared with the reference file
// against file; the values are pev::app's (values.h).

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "pev/app/values.h"
#include "pev/core/error.h"
#include "pev/kernel/strategy.h"

namespace pev::cli {

command add_compute(CLI::App& app) {
  struct state {
    encoding_options o;
    std::string strategy;
    std::string dtype = "fp32";
  };
  auto st = std::make_shared<state>();
  CLI::App* cmd = app.add_subcommand(
      "compute",
      "A built-in kernel's output, in the shapes of `pev reference` (same --what, formats and "
      "tensor names), so it can be compared with the reference.\nStrategies: hf (transformers' "
      "fp32 recipe), ggml (llama.cpp's fp32 recurrence, RoPE only), table-fp16, table-bf16 (fp32 "
      "math, cache stored in the 16-bit type), accurate (error independent of position).");
  cmd->add_option("--strategy", st->strategy, "hf, ggml, table-fp16, table-bf16 or accurate")
      ->required();
  st->o.add_to(*cmd);
  cmd->add_option("--dtype", st->dtype, "Output dtype: fp32, fp16 or bf16")->capture_default_str();
  return {cmd, [st]() -> int {
            const kernel::strategy strat = kernel::parse_strategy(st->strategy);
            const std::optional<dtype> t = app::parse_out_dtype(st->dtype);
            if (!t || t == dtype::fp64) {
              throw error("--dtype: kernels produce fp32, fp16 or bf16, got '" + st->dtype + "'");
            }
            st->o.check_ranges();
            const spec::encoding e = st->o.encoding();
            st->o.refuse_inputs_inside_out(e);
            app::output out = st->o.start_output(e, t);
            out.recipe = std::string("strategy:") + kernel::to_string(strat);
            std::vector<std::int64_t> pos = st->o.positions_for(e, out.what);
            app::write_compute(out, e, strat, pos, st->o.seq_len,
                               app::parse_out_format(st->o.format), st->o.out);
            return 0;
          }};
}

}  // namespace pev::cli
