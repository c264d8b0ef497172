#pragma once
// Internals shared by the writers of reports (write.cpp) and certificates (certificate.cpp):
// number and text formatting, escaping, file names, plot styles.

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <map>
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

// Colours distinguish dtypes in every plot (dash types distinguish strategies: write.cpp).
inline const char* dtype_colour(const std::string& d) {
  if (d == "fp32") return "#1f77b4";
  if (d == "fp16") return "#2ca02c";
  if (d == "bf16") return "#d62728";
  return "#7f7f7f";
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

/// gnuplot script of a check's ρ heatmap over position octave × index, reading `dd`'s CSVs.
std::string heatmap_script(const check& c, const std::string& dd);

// A certificate's own pages (certificate.cpp); the public writers (write.h) call them for results
// with a certification block.
std::string certificate_markdown(const results& r);
std::string certificate_html(const results& r, const std::map<std::string, std::string>& svgs);
std::map<std::string, std::string> certificate_plot_scripts(const results& r,
                                                            const std::string& data_dir);

}  // namespace pev::report::detail
