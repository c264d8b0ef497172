#pragma once
// report.json: the results as JSON (schema kSchemaVersion), and back. Doubles are written in the
// shortest form that reads back to the same double; non-finite values as the strings "inf", "-inf",
// "nan". Keys keep a fixed order, so equal results give byte-identical text.
//
// Timestamp fields (documented; they differ between otherwise identical runs):
// provenance.generated_at.

#include <string>
#include <string_view>

#include "pev/report/result.h"

namespace pev::report {

std::string to_json(const results& r);

/// Parses report.json text; throws pev::error naming `source` and the field when it is not a
/// report of this schema version.
results from_json(std::string_view text, const std::string& source);

}  // namespace pev::report
