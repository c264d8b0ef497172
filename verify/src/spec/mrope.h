#pragma once
// transformers' MRoPE keys in a config.json rope dictionary (docs/encodings.md §4.6), for the
// config reader (spec/config.h) to call on each rope dictionary it reads.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "pev/spec/spec.h"

namespace pev::spec::detail {

/// Whether a rope type name is Qwen2-VL's legacy "mrope" (rope_scaling {"type": "mrope",
/// "mrope_section": [...]}), which transformers standardizes to "default": the frequencies are
/// plain RoPE's and the sections say which position stream each pair takes.
bool is_mrope_type(std::string_view name);

/// Reads `mrope_section` (a list of 3 integer pair counts, or ggml's 4) and `mrope_interleaved`
/// (a boolean; Qwen3-VL) from the dictionary `d` into r. Keys absent leave r unchanged. Throws
/// pev::error naming `path.key` and the rule for a malformed value; spec::validate checks the
/// sections against the rotary dims.
void read_mrope_keys(const nlohmann::json& d, const std::string& path, rope& r);

}  // namespace pev::spec::detail
