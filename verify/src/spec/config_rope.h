#pragma once
// Internal to the config.json reader (config.cpp): the reader of one RoPE dict (config_rope.cpp).

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "config_family.h"
#include "pev/spec/spec.h"

namespace pev::spec::config_detail {

// What every group's reader needs: the message helper, the config object holding the attention
// keys (the root or its text_config, with the family's attribute_map applied), the root, the key
// prefix for messages ("text_config."), the family (null: a model_type pev does not know, read
// with the generic rules), and the keys as the config.json wrote them (rotary_emb_base for
// rope_theta, …).
struct context {
  const reader& in;
  const json* cfg;
  const json* root;
  std::string at;
  const family* fam;
  std::map<std::string, std::string, std::less<>> names;
  // The family's fallbacks when neither the dict nor the attributes give a value: rope_theta and
  // partial_rotary_factor (from the class's own keys or defaults), with the key they came from.
  double theta = 10000.0;
  std::string theta_name = "default_theta";
  std::optional<double> prf = std::nullopt;
  std::string prf_name = {};

  /// A key of the attribute object as the config.json wrote it, with the text_config prefix.
  std::string name(std::string_view key) const {
    const auto it = names.find(key);
    return at + (it == names.end() ? std::string(key) : it->second);
  }
  std::string_view model_type() const { return fam ? fam->model_type : std::string_view(); }
  bool is(special s) const { return fam != nullptr && fam->sp == s; }
};

/// Reads one flat rope dict `d` (the whole dict, or one layer-type group when `nested`); validates
/// the result when `selected`.
rope read_group(const context& ctx, const json& d, const std::string& path, bool nested,
                bool selected);

}  // namespace pev::spec::config_detail
