#pragma once
// An encoding from a SPEC string as both front ends read it (docs/design.md §5.2): parsed and
// validated, a learned table's `table=FILE` loaded.

#include <string>

#include "pev/core/error.h"
#include "pev/spec/spec.h"

namespace pev::app {

/// The encoding of `text` (spec::parse_spec; warnings go to `warn`), with a learned table's values
/// read from its .npy or .safetensors file.
spec::encoding parse_encoding(const std::string& text, const warning_sink& warn = warn_to_stderr);

}  // namespace pev::app
