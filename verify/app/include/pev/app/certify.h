#pragma once
// What `pev certify` shares with pev's Python module (docs/python.md §4): the certification
// options given as text, and the certificate's files.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "pev/certify/certify.h"
#include "pev/report/result.h"

namespace pev::app {

/// The options of --reference (fast, mpfr), --libm (any, one-ulp, glibc, cr) and --max-trig-ulp
/// ([0.5, 1e6)), checked (pev::error naming the flag): pev certify and pev's Python module.
void set_certify_options(certify::options& o, const std::string& reference, const std::string& libm,
                         std::optional<double> max_trig_ulp);

/// Writes certificate.json and the report's other files (summary.md for a CI job summary,
/// junit.xml, data/*.csv, index.html and plots/) as `dir`,
/// replacing it as one unit (io::write_directory_atomic). Returns the plots gnuplot could not draw
/// (listed in certificate.json and noted on the page; docs/design.md §8.3).
std::vector<report::skipped_plot> write_certificate(const certify::certificate& c,
                                                    const std::filesystem::path& dir);
/// Warns on stderr of each plot not drawn: "plot X not drawn: REASON".
void warn_skipped_plots(const std::vector<report::skipped_plot>& skipped);

}  // namespace pev::app
