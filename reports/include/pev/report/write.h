#pragma once
// Report writers (docs/design.md §3.10, §8.3): everything `pev report` leaves in its output
// directory, and a certificate's own pages (docs/design.md §6.9) for results with a certification
// block. They only read results.
//
// clang-format off
//   report.json     json.h
//   summary.md      one table of checks with pass/fail and the headline figure (a CI job summary)
//   junit.xml       one test case per check
//   data/*.csv      the figures behind every plot
//   plots/*.svg     rendered by gnuplot (a subprocess on a generated script; no network)
//   index.html      self-contained: the SVGs inline, no external resources
// A certificate writes certificate.json in place of report.json; its summary.md, index.html and
// plots (error against position per check) are its own.
// clang-format on
// Every file is written atomically (temporary file, then rename).

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "pev/report/result.h"

namespace pev::report {

/// A model trace's certificate with more sites than this shows only its worst sites in detail
/// (docs/certify.md §8.2): their rows in the Layers tables, their checks' rows, notes, CSVs and
/// plots — the `detailed` worst, and every failing site beyond them up to kMaxDetailedSites in
/// all. Every site's row and checks stay in certificate.json (and data/checks.csv, octaves.csv,
/// junit.xml); the pages say how many sites they leave out.
inline constexpr std::size_t kDetailedSites = 32;
inline constexpr std::size_t kMaxDetailedSites = 256;

/// summary.md: a report's table of checks, or a certificate's summary.
std::string summary_markdown(const results& r, std::size_t detailed = kDetailedSites);
/// The human-readable summary `pev certify` prints (pev::error unless r is a certificate).
std::string certificate_text(const results& r, std::size_t detailed = kDetailedSites);
std::string junit_xml(const results& r);

/// CSV files by name (relative to data/): octaves.csv (every check × octave), checks.csv,
/// heatmap_<check>.csv, invariance.csv, wavelengths.csv, ulp_histogram.csv (a trace's drift and
/// heatmap CSVs for the sites shown in detail only).
std::map<std::string, std::string> csv_files(const results& r,
                                             std::size_t detailed = kDetailedSites);

/// gnuplot scripts by SVG name (relative to plots/), reading the CSVs from `data_dir` (a report's
/// overview.svg carries its data inline). A certificate's: error_<check>.svg and
/// heatmap_<check>.svg per value check (of a trace: of the sites shown in detail).
std::map<std::string, std::string> plot_scripts(const results& r, const std::string& data_dir,
                                                std::size_t detailed = kDetailedSites);

/// index.html with the given SVG documents (name → text) inline: a report's page (the answer
/// first: the error up to each context length and the overview plot; then the headline, the plots
/// by spec, the checks per spec, the provenance and the specs), or a certificate's.
std::string index_html(const results& r, const std::map<std::string, std::string>& svgs,
                       std::size_t detailed = kDetailedSites);

/// The form a spec name or check id takes in file names (data/*.csv, plots/*.svg): letters,
/// digits and '-' kept, '/' as "--", anything else '_'. Two names with the same form would share
/// their files: `pev report` refuses them.
std::string file_stem(const std::string& name);

struct write_options {
  std::string gnuplot = "gnuplot";  // executable; empty: no plots (index.html says so)
  /// The sites of a trace's certificate shown in detail (kDetailedSites).
  std::size_t detailed = kDetailedSites;
};

/// Writes the whole report as `dir`, as one unit (io::write_directory_atomic: a run killed at any
/// moment leaves the previous report or none, never a torn one; a non-empty `dir` that is not a
/// previous report is refused). Throws pev::error naming the file on I/O failure, leaving `dir` as
/// it was. A plot gnuplot cannot draw (gnuplot missing, or failing on its script) is skipped: the
/// page shows a note in its place and the JSON lists it (results::plots_skipped); returns them.
std::vector<skipped_plot> write_report(const results& r, const std::filesystem::path& dir,
                                       const write_options& o = {});

/// Writes the report's files into the existing directory `dir`, one file at a time (for a caller
/// that adds its own files to the same unit, inside io::write_directory_atomic); the plots skipped.
std::vector<skipped_plot> write_report_files(const results& r, const std::filesystem::path& dir,
                                             const write_options& o = {});

}  // namespace pev::report
