// `pev reference`: the arbitrary-precision reference of an encoding at given positions (DESIGN §4).

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "output.h"
#include "pev/core/error.h"
#include "pev/ref/recipe.h"
#include "pev/ref/relative.h"
#include "pev/ref/rope.h"
#include "pev/ref/sinusoidal.h"
#include "pev/spec/spec.h"

namespace pev::cli {
namespace {

// Progress on stderr when it is a terminal (DESIGN §4), for requests that take more than a moment.
class progress {
 public:
  progress(std::size_t total, const char* label)
      : total_(total), label_(label), on_(total >= 2000 && isatty(STDERR_FILENO)) {}
  void step(std::size_t done) {
    if (on_ && (done % 256 == 0 || done == total_)) {
      std::fprintf(stderr, "\rpev: %s %zu/%zu", label_, done, total_);
      if (done == total_) std::fputc('\n', stderr);
    }
  }

 private:
  std::size_t total_;
  const char* label_;
  bool on_;
};

std::string default_what(const spec::encoding& e) {
  return std::visit(
      [](const auto& s) -> std::string {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, spec::rope>) return "table";
        if constexpr (std::is_same_v<T, spec::alibi>) return "bias";
        if constexpr (std::is_same_v<T, spec::t5> || std::is_same_v<T, spec::shaw>) {
          return "buckets";
        }
        return "pe";
      },
      e);
}

[[noreturn]] void what_mismatch(const std::string& what, const spec::encoding& e,
                                const char* allowed) {
  throw error("--what " + what + " does not apply to " + spec::family_name(e) +
              " (it has: " + allowed + ")");
}

void fill_rope(output& out, const spec::rope& s, const ref::recipe& r,
               const std::vector<std::int64_t>& pos, std::optional<std::int64_t> seq_len) {
  const std::int64_t max_pos = *std::max_element(pos.begin(), pos.end());
  // transformers' stateful types see seq_len = max(position_ids) + 1.
  const std::int64_t seq = seq_len.value_or(max_pos == INT64_MAX ? max_pos : max_pos + 1);
  const ref::rope_reference rr(s, r,
                               s.stateful() ? std::optional<std::int64_t>(seq) : std::nullopt);
  const std::int64_t n = s.pairs();
  if (out.what == "inv_freq") {
    out.main = {"inv_freq", {n}, rr.inv_freq(), {}, false};
    out.row_label = "pair";
    out.columns = {"inv_freq"};
    return;
  }
  if (out.what == "attention_factor") {
    out.main = {"attention_factor", {}, {rr.attention_factor()}, {}, false};
    out.columns = {"attention_factor"};
    return;
  }
  if (out.what != "table") what_mismatch(out.what, s, "table, inv_freq, attention_factor");
  const auto P = static_cast<std::int64_t>(pos.size());
  tensor main{"table", {P, n, 2}, {}, {}, false};
  tensor c{"cos", {P, n}, {}, {}, false};
  tensor sn{"sin", {P, n}, {}, {}, false};
  main.values.reserve(static_cast<std::size_t>(P * n * 2));
  progress bar(pos.size(), "reference");
  for (std::size_t k = 0; k < pos.size(); ++k) {
    for (const auto& cs : rr.row(pos[k])) {
      main.values.push_back(cs.cos);
      main.values.push_back(cs.sin);
      c.values.push_back(cs.cos);
      sn.values.push_back(cs.sin);
    }
    bar.step(k + 1);
  }
  out.main = std::move(main);
  out.parts = {std::move(c), std::move(sn)};
  out.positions = pos;
  for (std::int64_t i = 0; i < n; ++i) {
    out.columns.push_back("cos_" + std::to_string(i));
    out.columns.push_back("sin_" + std::to_string(i));
  }
}

template <class RowFn>
void fill_pe(output& out, const spec::encoding& e, std::int64_t d,
             const std::vector<std::int64_t>& pos, RowFn row) {
  if (out.what != "pe") what_mismatch(out.what, e, "pe");
  const auto P = static_cast<std::int64_t>(pos.size());
  out.main = {"pe", {P, d}, {}, {}, false};
  out.main.values.reserve(static_cast<std::size_t>(P * d));
  progress bar(pos.size(), "reference");
  for (std::size_t k = 0; k < pos.size(); ++k) {
    for (auto& v : row(pos[k])) out.main.values.push_back(std::move(v));
    bar.step(k + 1);
  }
  out.positions = pos;
  for (std::int64_t j = 0; j < d; ++j) out.columns.push_back("d_" + std::to_string(j));
}

void fill_alibi(output& out, const spec::alibi& s, const ref::recipe& r,
                const std::vector<std::int64_t>& pos) {
  const auto slopes = ref::alibi_slopes(s, r);
  const std::int64_t H = s.num_heads;
  if (out.what == "slopes") {
    out.main = {"slopes", {H}, slopes, {}, false};
    out.row_label = "head";
    out.columns = {"slope"};
    return;
  }
  if (out.what != "bias") what_mismatch(out.what, s, "bias, slopes");
  const auto P = static_cast<std::int64_t>(pos.size());
  if (static_cast<double>(H) * double(P) * double(P) > double(std::int64_t(1) << 26)) {
    throw error("--what bias: " + std::to_string(H) + " heads × " + std::to_string(P) +
                "² positions is " + "too large for one request (at most 2^26 values)");
  }
  out.main = {"bias", {H, P, P}, {}, {}, false};
  for (std::int64_t h = 0; h < H; ++h) {
    for (auto i : pos) {
      for (auto j : pos) out.main.values.push_back(ref::alibi_bias(slopes[h], i, j));
    }
  }
  out.positions = pos;
  out.text_row_width = static_cast<std::size_t>(P);
  out.dim_names = {"head", "query", "key"};
  out.dim_is_position = {false, true, true};
  out.columns = {"bias"};
}

}  // namespace

command add_reference(CLI::App& app) {
  struct state {
    encoding_options o;
    std::string dtype = "exact";
    std::string recipe = "exact";
    unsigned precision = 0;
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
  cmd->add_option("--what", st->o.what,
                  "table, inv_freq, attention_factor, pe, bias, slopes or buckets (default: the "
                  "family's main output)");
  cmd->add_option("--recipe", st->recipe,
                  "exact (the mathematical definition), hf (transformers' fp32 pipeline) or ggml "
                  "(llama.cpp's fp32 recurrence): round only where the recipe rounds")
      ->capture_default_str();
  cmd->add_option(
      "--precision", st->precision,
      "MPFR precision in bits (default " + std::to_string(default_precision_bits()) + ")");
  return {cmd, [st]() -> int {
            if (st->precision) set_precision_bits(st->precision);
            const spec::encoding e = st->o.encoding();
            output out;
            out.what = st->o.what.empty() ? default_what(e) : st->o.what;
            out.dtype = parse_out_dtype(st->dtype);
            out.recipe = st->recipe;
            out.precision_bits = precision_bits();
            out.spec = spec::to_spec_string(e);
            out.digits = st->o.digits;
            const out_format format = parse_out_format(st->o.format);
            const ref::recipe& r = ref::find_recipe(st->recipe);
            const bool relative =
                std::holds_alternative<spec::t5>(e) || std::holds_alternative<spec::shaw>(e);
            const bool needs_positions =
                !(out.what == "inv_freq" || out.what == "attention_factor" || out.what == "slopes");
            std::vector<std::int64_t> pos;
            if (needs_positions || !st->o.positions.empty() || !st->o.positions_file.empty()) {
              pos = st->o.read_positions(relative);
            }
            if (const auto* s = std::get_if<spec::rope>(&e)) {
              fill_rope(out, *s, r, pos.empty() ? std::vector<std::int64_t>{0} : pos,
                        st->o.seq_len);
            } else if (const auto* s = std::get_if<spec::sinusoidal>(&e)) {
              fill_pe(out, e, s->d_model, pos,
                      [&](std::int64_t p) { return ref::sinusoidal_row(*s, p, r); });
            } else if (const auto* s = std::get_if<spec::learned>(&e)) {
              fill_pe(out, e, s->d_model, pos,
                      [&](std::int64_t p) { return ref::learned_row(*s, p, r); });
            } else if (const auto* s = std::get_if<spec::alibi>(&e)) {
              fill_alibi(out, *s, r, pos);
            } else {
              if (out.what != "buckets") what_mismatch(out.what, e, "buckets");
              if (out.dtype != out_dtype::exact) {
                throw error("--dtype does not apply to --what buckets (bucket ids are integers)");
              }
              out.dtype = out_dtype::int64;
              const auto P = static_cast<std::int64_t>(pos.size());
              out.main = {"buckets", {P}, {}, {}, true};
              for (auto d : pos) {
                out.main.ints.push_back(std::holds_alternative<spec::t5>(e)
                                            ? ref::t5_bucket(std::get<spec::t5>(e), d, r)
                                            : ref::shaw_clip(std::get<spec::shaw>(e), d));
              }
              out.positions = pos;
              out.row_label = "distance";
              out.columns = {"bucket"};
            }
            write_output(out, format, st->o.out);
            return 0;
          }};
}

}  // namespace pev::cli
