// The per-layer encodings of a model (spec/model.h, docs/encodings.md §7.9).

#include "pev/spec/model.h"

#include <fmt/format.h>

#include "pev/spec/config.h"

namespace pev::spec {

std::string layer_spec::prefix() const {
  if (index < 0) return site;
  return site.empty() ? fmt::format("layers.{}", index) : fmt::format("layers.{}.{}", index, site);
}

// Interim (replaced by the per-layer rules of docs/encodings.md §7.9): every layer the one
// encoding of the config.
model_spec parse_config_model_text(std::string_view json_text, std::string_view source,
                                   const warning_sink& warn) {
  model_spec m;
  const encoding e = parse_config_encoding_text(json_text, source, {}, warn);
  m.num_layers = 1;
  layer_spec l;
  l.index = 0;
  l.type = "full_attention";
  l.encoding = e;
  l.rule = "the config's one encoding";
  m.layers.push_back(l);
  return m;
}

}  // namespace pev::spec
