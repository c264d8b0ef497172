#pragma once
// Internal to the per-layer reader (model.cpp): the families' rules for which layer is of which
// type and which layers rotate (docs/encodings.md §7.9).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config_family.h"
#include "pev/spec/spec.h"

namespace pev::spec::config_detail {

/// The most decoder layers a config may declare.
inline constexpr std::int64_t max_model_layers = std::int64_t{1} << 20;

/// One decoder layer by the config: its type (as the config names it, legacy names remapped),
/// whether it rotates, the rope group it takes (its type), and why (the keys that decided).
struct layer_plan {
  std::string type;
  bool rotates = true;
  std::string group;
  std::string why;
};

/// Whether the config class of `model_type` derives layer_types when the config has none (the
/// table of docs/encodings.md §7.9); for the others every layer is full_attention.
bool derives_layer_types(std::string_view model_type);

/// Every decoder layer's plan: `layer_types` (given, else derived as the family's config class
/// does), `no_rope_layers` / `no_rope_layer_interval` (Llama-4, SmolLM3), linear-attention layers
/// and Cohere2's full-attention layers without RoPE. pev::error naming a layer type or key whose
/// rule pev does not know.
std::vector<layer_plan> plan_layers(const reader& in, const json& cfg, const std::string& at,
                                    const family* fam, std::int64_t num_layers);

/// What a rotating layer's rule adds about keys that changed (or did not change) its rope: the
/// base a group took (rope_local_base_freq, …), HunYuan's alpha, Ministral-3's
/// llama_4_scaling_beta (a q scale, not a rotation). Starts with "; " or is empty.
std::string rope_note(const json& cfg, const std::string& at, const family* fam, const rope& r,
                      const std::string& group);

}  // namespace pev::spec::config_detail
