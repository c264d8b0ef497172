#pragma once
// The mutant catalogue: deliberately wrong implementations, each modelled on a real bug class of
// the field (docs/encodings.md §10). They prove the power of the property suites (every mutant
// must be caught) and serve certification's diagnosis (which known mistake explains the data;
// docs/design.md §6.7). Each mutant is pev's correct `hf` pipeline with exactly what its bug
// perturbs changed, and the change is data: the hooks of its catalogue entry (mutant_hooks), which
// one implementation class applies. A mutant claims the hf accuracy contract, as the buggy engines
// claim to be transformers-faithful.
//
// Ids are stable: reports and certificates refer to them.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "pev/impl/implementation.h"
#include "pev/spec/spec.h"

namespace pev::impl {

/// What a mutant changes in the hf pipeline. Every hook is optional (null: unchanged).
struct mutant_hooks {
  // ---- Which spec the correct kernels see.
  /// The spec handed to the hf kernels (a wrong setting: truncate, lists, base, layout, type).
  void (*plan)(spec::encoding& e) = nullptr;
  /// The spec the rotation of q/k is applied with (a wrong layout or rotary dim).
  void (*rotation)(spec::rope& r) = nullptr;
  /// The rotation's table comes from the rotation spec's own kernel (its rotary dims).
  bool rotation_table = false;
  /// The plan's rope_theta is the base the data implies, when the diagnosis recovered one
  /// (mutant_options::rope_theta); the plan's own guess otherwise.
  bool implied_theta = false;

  // ---- RoPE table, restated from the hf recipe (fp32 position × fp32 frequency, cosf/sinf, × m)
  // when any of these is set.
  /// The fp32 frequencies (starting from the hf kernel's).
  void (*frequencies)(const spec::rope& s, std::vector<float>& f) = nullptr;
  /// The position as an fp32 operand (hf: float(p)).
  float (*position)(std::int64_t p) = nullptr;
  /// The fp32 angle p·θ_i after the product.
  float (*angle)(float a) = nullptr;
  /// The fp32 sin/cos of the angle (the library's: cosf/sinf by default).
  float (*trig)(float a, bool is_sin) = nullptr;
  /// The attention factor applied (from the hf one).
  float (*magnitude)(const spec::rope& s, float m) = nullptr;
  /// The sequence length the frequencies are planned for (stateful types).
  std::optional<std::int64_t> (*sequence_length)(const spec::rope& s,
                                                 std::optional<std::int64_t> seq) = nullptr;
  /// The fp32 table after it is computed (e.g. cos and sin swapped).
  void (*table)(std::span<float> cos, std::span<float> sin) = nullptr;
  /// The rotation uses the backward table (sin negated).
  bool backward = false;
  /// MRoPE: the position stream the mistaken engine gives pair i (the correct one is
  /// spec::mrope_stream; docs/encodings.md §4.6).
  std::int64_t (*stream)(const spec::rope& s, std::int64_t i) = nullptr;

  // ---- Other families.
  /// Sinusoidal: output column j takes the correct row's column pe_column(s, j).
  std::int64_t (*pe_column)(const spec::sinusoidal& s, std::int64_t j) = nullptr;
  /// ALiBi: the fp32 slopes.
  void (*slopes)(const spec::alibi& s, std::vector<float>& m) = nullptr;
  /// ALiBi: the bias uses i − j instead of j − i.
  bool bias_sign = false;
  /// T5: the bucket of distance r, given the correct (hf) one.
  std::int64_t (*bucket)(const spec::t5& s, std::int64_t r, std::int64_t hf) = nullptr;

  /// Whether the RoPE table is restated from the hf recipe (any of its table hooks is set).
  bool restates_table() const { return frequencies || position || angle || trig; }
};

struct mutant_info {
  const char* id;           // stable, kebab-case
  const char* family;       // the encoding family it applies to (spec::family_name)
  const char* description;  // the real bug class, one line
  const char* reference;    // where it happened (issue/PR), for the reader
  /// Whether the bug changes anything for this encoding (e.g. the ALiBi power-of-two rule only
  /// differs for head counts that are not powers of two).
  bool (*applies)(const spec::encoding& e);
  mutant_hooks hooks;
  /// The pipeline the bug lives in: transformers' (hf) or llama.cpp's (ggml) for their own
  /// mistakes; the diagnosis replays the others on the pipeline of the recipe under test.
  kernel::strategy base = kernel::strategy::hf;
};

/// How a mutant is replayed (the diagnosis replays each mistake on the pipeline of the recipe
/// under test, docs/design.md §6.7).
struct mutant_options {
  /// The correct pipeline the bug is planted in (none: the entry's own base). Mistakes that
  /// restate the hf table (frequencies, positions, angles) exist on the hf pipeline only.
  std::optional<kernel::strategy> base;
  /// How q/k are rotated: in fp32, stored once (pev's kernels, vLLM, ggml), or in the output
  /// type with the table cast to it (transformers in the model dtype).
  bool rotate_in_output_type = false;
  /// The fp32 frequencies of the hf pipeline the bug is planted in (empty: the hf kernel's own):
  /// the diagnosis passes those the data follows (a GPU's inv_freq may differ from pev's by an ulp,
  /// which moves an angle at 10^6 by far more than any bound). Mistakes that change the spec (a
  /// plan, a sequence length) keep their own.
  std::vector<float> inv_freq;
  /// The base the data's frequencies imply (certify's table fit), for a mistake whose hooks take
  /// it (mutant_hooks::implied_theta): the wrong base replayed is the data's own.
  std::optional<double> rope_theta;
};

/// Every mutant, in a fixed order.
std::span<const mutant_info> mutant_catalogue();
/// The entry with this id; throws pev::error listing the ids otherwise.
const mutant_info& find_mutant(std::string_view id);

/// The mutant `id` for encoding `e` (which it must apply to; pev::error otherwise). Its name is
/// "mutant:<id>".
std::unique_ptr<implementation> make_mutant(std::string_view id, const spec::encoding& e,
                                            const mutant_options& o = {});
/// The spec the mistaken pipeline's kernels see: `e` with the entry's plan applied (and the
/// implied base of mutant_options::rope_theta where its hooks take it).
spec::encoding planned_spec(const mutant_info& m, const spec::encoding& e,
                            const mutant_options& o = {});
/// Whether make_mutant can replay `id` on `base` (a restated hf table cannot be replayed on
/// ggml's recurrence).
bool mutant_replays_on(const mutant_info& m, kernel::strategy base);

/// The control: the mutants' machinery with no bug (RoPE tables from their own restatement of
/// the hf recipe — fp32 position × fp32 frequency, cosf/sinf, × m — everything else from the hf
/// kernel). It must pass every property; tests/properties checks that it does, so that a
/// mutant's failure is its bug's and not the machinery's. Its name is "mutant:control".
std::unique_ptr<implementation> make_control(const spec::encoding& e, const mutant_options& o = {});

}  // namespace pev::impl
