#pragma once
// Internals shared by the writers of reports (write.cpp, the page: page.cpp, its answer:
// answer.cpp) and certificates (certificate.cpp): number and text formatting, escaping, file names,
// plot styles.

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "pev/report/result.h"

namespace pev::report::detail {

/// A file-name-safe form of an id ("llama3.1/hf/fp32" → "llama3_1-hf-fp32").
inline std::string slug(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') {
      o += c;
    } else if (c == '/') {
      o += "--";
    } else {
      o += '_';
    }
  }
  return o;
}

inline std::string g(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.4g}", v);
}

/// Full precision (shortest round-trip) for CSV data.
inline std::string d17(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);
}

inline std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&apos;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

inline std::string md_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') o += '\\';
    o += c;
  }
  return o;
}

inline std::string reference_text(const provenance& p) {
  return fmt::format("{} exact reference, MPFR {} bits ({} of {} values from the MPFR fallback)",
                     p.reference, p.mpfr_precision_bits, p.reference_fallbacks, p.reference_values);
}

// Colours distinguish dtypes in every plot (dash types and points distinguish strategies, below).
inline const char* dtype_colour(const std::string& d) {
  if (d == "fp32") return "#1f77b4";
  if (d == "fp16") return "#2ca02c";
  if (d == "bf16") return "#d62728";
  return "#7f7f7f";
}
inline std::size_t failures(const results& r) {
  return static_cast<std::size_t>(
      std::count_if(r.checks.begin(), r.checks.end(), [](const check& c) { return !c.pass; }));
}

/// The positions of a sweep (docs/design.md §8.1); the largest position is included.
inline std::string sampling_text(const provenance& p) {
  if (p.exhaustive || p.max_position < p.dense_below) {
    return fmt::format("every position 0 … {}", p.max_position);
  }
  return fmt::format(
      "every position 0 … {}, then {} deterministic samples per octave (and its ends) up to {} "
      "(included), local worst-case search ±{} around each octave's max ρ",
      p.dense_below - 1, p.samples_per_octave, p.max_position, p.search_radius);
}

// Colours distinguish dtypes in every plot (dtype_colour); dash types and points strategies.
inline int strategy_dash(const std::string& s) {
  if (s == "hf") return 1;
  if (s == "ggml") return 2;
  if (s == "table-fp16") return 3;
  if (s == "table-bf16") return 4;
  return 5;
}
inline const char* strategy_point(const std::string& s) {
  if (s == "hf") return "7";
  if (s == "ggml") return "5";
  if (s == "table-fp16") return "9";
  if (s == "table-bf16") return "11";
  return "13";
}

inline std::vector<std::string> unique_in_order(const std::vector<std::string>& v) {
  std::vector<std::string> o;
  for (const auto& s : v) {
    if (std::find(o.begin(), o.end(), s) == o.end()) o.push_back(s);
  }
  return o;
}

inline const char* const kTerminal =
    "set terminal svg size 760,460 font 'Helvetica,12' background '#ffffff'\n"
    "set datafile separator ','\n"
    "set key outside right top box opaque\n"
    "set grid lc rgb '#dddddd'\n";

inline std::string drift_csv_name(const check& c) { return "drift_" + slug(c.id) + ".csv"; }
inline std::string heatmap_csv_name(const check& c) { return "heatmap_" + slug(c.id) + ".csv"; }
/// Whether a series has a value a log axis can show.
template <class F>
bool any_positive(const std::vector<octave>& v, F&& f) {
  for (const auto& o : v) {
    const double x = f(o);
    if (x > 0 && std::isfinite(x)) return true;
  }
  return false;
}
inline bool any_positive(const std::vector<double>& v) {
  for (double x : v) {
    if (x > 0 && std::isfinite(x)) return true;
  }
  return false;
}

/// The known facts of docs/numerics.md §15.1, §15.2 as the run measured them, one line per RoPE
/// spec (write.cpp; summary.md and the page).
std::vector<std::string> headline(const results& r);

/// The report's answer (answer.cpp): per spec, strategy and dtype, the largest absolute error over
/// the positions up to each of a few context lengths, as the page's first table and as the
/// overview plot's gnuplot script (empty when no check has a float dtype).
/// Its CSS shows the rows of the strategy chosen (no script).
std::string answer_html(const results& r, const std::map<std::string, std::string>& svgs);
std::string answer_css(const results& r);
std::string overview_script(const results& r);

/// gnuplot script of a check's ρ heatmap over position octave × index, reading `dd`'s CSVs.
std::string heatmap_script(const check& c, const std::string& dd);

/// The page's note in place of a plot gnuplot could not draw: "plot X not drawn: <reason>".
inline std::string skipped_note(const skipped_plot& p) {
  return "plot " + p.file + " not drawn: " + p.reason;
}

/// The sites of a model trace's certificate shown in detail (layers.cpp, write.h
/// kDetailedSites, docs/certify.md §8.2): all of them up to `detailed`, else the `detailed` worst
/// and every failing site beyond them up to kMaxDetailedSites, in the config's order.
struct site_selection {
  std::vector<bool> shown;       // per row of certification::layers
  std::size_t count = 0;         // the sites shown
  bool all = true;               // every site shown (one dump: no sites)
  std::set<std::string> hidden;  // the ids of the checks of the sites left out
  std::size_t hidden_sites() const { return shown.size() - count; }
  /// Whether check `k` is shown: every check but those of the sites left out.
  bool shows(const check& k) const { return all || hidden.count(k.id) == 0; }
  /// "9968 more sites (9968 correctly-rounded) and their 19936 checks are in certificate.json":
  /// what the pages leave out; "" when every site is shown.
  std::string left_out(const certification& c) const;
};
site_selection select_sites(const results& r, std::size_t detailed);

// A certificate's own pages (certificate.cpp); the public writers (write.h) call them for results
// with a certification block.
std::string certificate_markdown(const results& r, const site_selection& sel);
/// A model trace's sites (layers.cpp, docs/certify.md §8.2): lines of the text summary, the
/// Layers section of summary.md and of the page (with its strip of layers); "" for one dump. Rows
/// only for the sites `sel` shows.
std::string layers_text(const certification& c, const site_selection& sel);
std::string layers_markdown(const certification& c, const site_selection& sel);
std::string layers_html(const certification& c, const site_selection& sel);
std::string certificate_html(const results& r, const std::map<std::string, std::string>& svgs,
                             const site_selection& sel);
std::map<std::string, std::string> certificate_plot_scripts(const results& r,
                                                            const std::string& data_dir,
                                                            const site_selection& sel);

}  // namespace pev::report::detail
