#pragma once
// A model's positional encodings, layer by layer, from its config.json (docs/encodings.md §7.9):
// which layers rotate, over how many dimensions, with which θ and scaling — `layer_types` with
// per-layer-type `rope_parameters` or `rope_local_base_freq`, `no_rope_layers` /
// `no_rope_layer_interval`, linear-attention layers, partial rotary, MRoPE, DeepSeek's MLA rope and
// its indexer, T5's encoder and decoder buckets, a learned table added at the input. Certifying a
// model trace (pev/certify/trace.h, docs/certify.md §8) holds every site of the trace to its own
// entry here.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pev/core/error.h"
#include "pev/spec/spec.h"

namespace pev::spec {

/// One place of a model where a positional encoding is applied (or, by the config, is not).
struct layer_spec {
  /// The decoder layer's index, 0-based; −1 for a model-level site (`embed`, `encoder`, `decoder`).
  std::int64_t index = 0;
  /// The site within the layer: "" for the attention's rotation of q/k; "indexer" (DeepSeek-V3.2's
  /// lightning indexer), "compress" (DeepSeek-V4's compressed group); model-level: "embed" (a
  /// learned or sinusoidal table added at the input), "encoder" / "decoder" (T5's buckets).
  std::string site;
  /// The layer's type as the config names it (`layer_types[i]`: "full_attention",
  /// "sliding_attention", "chunked_attention", "linear_attention", …), "full_attention" when the
  /// config has no layer_types; the site's name for a model-level site.
  std::string type;
  /// The encoding the config gives this site; none: no positional encoding (a NoPE layer, a
  /// linear-attention layer): the identity is expected.
  std::optional<spec::encoding> encoding;
  /// Which config keys decided it, for the reader ("layer_types[3] = sliding_attention:
  /// rope_parameters.sliding_attention", "no_rope_layers[3] = 0: NoPE").
  std::string rule;

  /// The prefix of the site's tensors in a trace: "layers.{index}", "layers.{index}.{site}", or
  /// the site's name for a model-level site.
  std::string prefix() const;
};

struct model_spec {
  std::string model_type;       // the config's model_type ("" when absent)
  std::int64_t num_layers = 0;  // num_hidden_layers (0 for a model without decoder layers)
  /// Every site, ordered by (index, site); model-level sites (index −1) first.
  std::vector<layer_spec> layers;
};

/// The layer-by-layer encodings of a config.json file (at most max_config_bytes). pev::error for
/// a family or key whose per-layer rule pev does not know, naming it (never a guess).
model_spec parse_config_model_file(const std::filesystem::path& file,
                                   const warning_sink& warn = warn_to_stderr);
/// The same from config.json text; `source` names it in messages.
model_spec parse_config_model_text(std::string_view json_text, std::string_view source,
                                   const warning_sink& warn = warn_to_stderr);

}  // namespace pev::spec
