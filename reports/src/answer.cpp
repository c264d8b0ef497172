// The report's answer (detail.h): what a user opens the page for — per spec, strategy and output
// dtype, the largest absolute error over the positions up to a few context lengths — as the page's
// first table and as the overview plot, both from the octaves the report already holds.

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <map>
#include <sstream>
#include <utility>
#include <vector>

#include "detail.h"

namespace pev::report {

using namespace detail;  // NOLINT(google-build-using-namespace): the shared helpers

namespace {

/// The context lengths of the answer's table (tokens: 4K = 4096).
constexpr std::array<std::pair<std::int64_t, const char*>, 4> kLengths = {
    {{4096, "4K"}, {32768, "32K"}, {131072, "128K"}, {1048576, "1M"}}};

/// The table's columns: the lengths the sweep reached, and its own end when that is none of them
/// (a model of 512 positions: "≤ 511").
std::vector<std::pair<std::int64_t, std::string>> lengths_of(const results& r) {
  std::vector<std::pair<std::int64_t, std::string>> v;
  const std::int64_t end = r.prov.max_position + 1;
  for (const auto& [length, label] : kLengths) {
    if (length <= end) v.emplace_back(length, label);
  }
  if (v.empty() || v.back().first != end) {
    v.emplace_back(end, fmt::format("≤ {}", r.prov.max_position));
  }
  return v;
}

/// The dtypes the table has columns for; a check of another dtype (T5's int64 buckets) is listed in
/// its row's one cell.
constexpr std::array<const char*, 3> kFloatDtypes = {"fp32", "fp16", "bf16"};

bool is_float(const std::string& dtype) {
  return std::find(kFloatDtypes.begin(), kFloatDtypes.end(), dtype) != kFloatDtypes.end();
}

/// A check's figures over the positions below `length`: the largest absolute error and ρ of the
/// octaves that start below it (octaves are powers of two, so none straddles a length of the
/// table), or nothing when the sweep stopped short of `length` − 1.
struct up_to {
  bool covered = false;
  double max_abs = 0;
  double max_rho = 0;
};

up_to figures_up_to(const check& c, std::int64_t length) {
  up_to u;
  if (c.octaves.empty() || c.octaves.back().hi < length) return u;
  u.covered = true;
  for (const octave& o : c.octaves) {
    if (o.lo >= length) break;
    u.max_abs = std::max(u.max_abs, o.max_abs);
    u.max_rho = std::max(u.max_rho, o.max_rho);
  }
  return u;
}

/// A compact error: three significant digits.
std::string short_g(double v) {
  if (!std::isfinite(v)) return g(v);
  return fmt::format("{:.3g}", v);
}

std::string cell(const check& c, std::int64_t length) {
  const up_to u = figures_up_to(c, length);
  if (!u.covered) return "<td class=\"na\" title=\"not swept this far\">—</td>";
  return fmt::format("<td{} title=\"{} over positions below {}: max ρ {}\">{}</td>",
                     u.max_rho > 1 ? " class=\"fail\"" : "", xml_escape(c.id), length, g(u.max_rho),
                     short_g(u.max_abs));
}

/// The checks of the answer's rows in the order of the report: spec, then strategy.
std::vector<std::string> strategies_of(const results& r) {
  std::vector<std::string> v;
  for (const auto& c : r.checks) v.push_back(c.strategy);
  return unique_in_order(v);
}

bool any_rope(const results& r) {
  return std::any_of(r.checks.begin(), r.checks.end(),
                     [](const check& k) { return k.family == "rope"; });
}

/// The RoPE specs when there are any (the overview's subject), else every spec with a float dtype.
bool in_overview(const results& r, const check& c) {
  return is_float(c.dtype) && (!any_rope(r) || c.family == "rope");
}

}  // namespace

std::string detail::overview_script(const results& r) {
  // Per strategy × dtype: at each octave's end L, the largest error below L of the worst spec.
  std::map<std::pair<std::string, std::string>, std::map<std::int64_t, double>> series;
  std::vector<std::string> specs;
  for (const check& c : r.checks) {
    if (!in_overview(r, c)) continue;
    specs.push_back(c.spec_name);
    auto& s = series[{c.strategy, c.dtype}];
    for (const octave& o : c.octaves) {
      const up_to u = figures_up_to(c, o.hi);
      if (u.covered) s[o.hi] = std::max(s[o.hi], u.max_abs);
    }
  }
  std::ostringstream data, plot;
  int n = 0;
  for (const auto& st : strategies_of(r)) {
    for (const char* dt : kFloatDtypes) {
      const auto it = series.find({st, dt});
      if (it == series.end() || !any_positive([&] {
            std::vector<double> v;
            for (const auto& [length, e] : it->second) v.push_back(e);
            return v;
          }())) {
        continue;
      }
      data << "$s" << n << " << EOD\n";
      for (const auto& [length, e] : it->second) data << length << ',' << d17(e) << '\n';
      data << "EOD\n";
      plot << (n == 0 ? "plot " : ", \\\n     ") << "$s" << n
           << " using 1:($2>0?$2:1/0) with linespoints lw 1.5 dt " << strategy_dash(st) << " pt "
           << strategy_point(st) << " ps 0.5 lc rgb '" << dtype_colour(dt) << "' title '" << st
           << " " << dt << "'";
      ++n;
    }
  }
  if (n == 0) return "";
  const auto n_specs = unique_in_order(specs).size();
  std::ostringstream os;
  os << "set terminal svg size 860,330 font 'Helvetica,12' background '#ffffff'\n"
     << "set datafile separator ','\nset key outside right top box opaque font ',10'\n"
     << "set grid lc rgb '#dddddd'\n"
     << data.str() << "set logscale x 2\nset logscale y 10\nset format y '10^{%L}'\n"
     << "set xtics ('1' 1, '16' 16, '256' 256, '4K' 4096, '32K' 32768, '128K' 131072, "
        "'1M' 1048576, '16M' 16777216)\n"
     << "set title 'max absolute error over positions below L, the worst of " << n_specs
     << (any_rope(r) ? " RoPE" : "") << " spec" << (n_specs == 1 ? "" : "s") << "'\n"
     << "set xlabel 'context length L (tokens)'\n"
     << "set ylabel 'max |computed − exact| (value units)'\n"
     << plot.str() << "\n";
  return os.str();
}

std::string detail::answer_css(const results& r) {
  // The strategy's radio button shows its rows (answer_html): CSS alone, no script.
  std::string css;
  for (const auto& st : strategies_of(r)) {
    const std::string k = slug(st);
    css += "#st-" + k + ":checked~table tr.st-" + k + "{display:table-row}#st-" + k +
           ":checked+label{background:#1f77b4;color:#fff}\n";
  }
  return css;
}

std::string detail::answer_html(const results& r, const std::map<std::string, std::string>& svgs) {
  if (r.checks.empty()) return "";
  std::ostringstream os;
  os << "<section id=\"answer\">\n<h2>The answer: the error up to each context length</h2>\n"
     << "<p class=\"lead\">Largest |computed − exact| over the positions below each context "
        "length (up to the sweep's end), per spec and output dtype, for the strategy chosen; red: "
        "beyond the strategy's "
        "bound (ρ &gt; 1); —: not swept that far.</p>\n"
     << "<div class=\"tabs\">\nstrategy:\n";
  const auto sts = strategies_of(r);
  for (std::size_t k = 0; k < sts.size(); ++k) {
    const std::string id = "st-" + slug(sts[k]);
    os << "<input type=\"radio\" name=\"strategy\" id=\"" << id << "\""
       << (k == 0 ? " checked" : "") << "><label for=\"" << id << "\">" << xml_escape(sts[k])
       << "</label>\n";
  }
  std::vector<std::string> dts;
  for (const char* dt : kFloatDtypes) {
    if (std::any_of(r.checks.begin(), r.checks.end(),
                    [&](const check& c) { return c.dtype == dt; }))
      dts.push_back(dt);
  }
  const auto lengths = lengths_of(r);
  os << "<table id=\"answer-table\" class=\"answer\">\n<thead><tr><th rowspan=\"2\">spec</th>";
  for (const auto& dt : dts) os << "<th colspan=\"" << lengths.size() << "\">" << dt << "</th>";
  os << "</tr>\n<tr>";
  for (std::size_t d = 0; d < dts.size(); ++d) {
    for (const auto& [length, label] : lengths) os << "<th>" << label << "</th>";
  }
  os << "</tr></thead>\n<tbody>\n";
  std::vector<std::string> specs;
  for (const auto& c : r.checks) specs.push_back(c.spec_name);
  for (const auto& spec : unique_in_order(specs)) {
    for (const auto& st : sts) {
      std::vector<const check*> row;
      for (const auto& c : r.checks) {
        if (c.spec_name == spec && c.strategy == st) row.push_back(&c);
      }
      if (row.empty()) continue;
      os << "<tr class=\"st-" << slug(st) << "\"><th class=\"wrap\">" << xml_escape(spec)
         << "</th>";
      std::string others;
      for (const check* c : row) {
        if (is_float(c->dtype)) continue;
        others += (others.empty() ? "" : "; ") + xml_escape(c->dtype) + ":";
        for (const auto& [length, label] : lengths) {
          const up_to u = figures_up_to(*c, length);
          others += fmt::format(" {} {}", label, u.covered ? short_g(u.max_abs) : "—");
        }
      }
      const bool any_float =
          std::any_of(row.begin(), row.end(), [](const check* c) { return is_float(c->dtype); });
      if (!any_float) {
        os << "<td class=\"other\" colspan=\"" << dts.size() * lengths.size() << "\">" << others
           << "</td>";
      } else {
        for (const auto& dt : dts) {
          const auto c =
              std::find_if(row.begin(), row.end(), [&](const check* k) { return k->dtype == dt; });
          for (const auto& [length, label] : lengths) {
            os << (c == row.end() ? "<td class=\"na\">—</td>" : cell(**c, length));
          }
        }
      }
      os << "</tr>\n";
    }
  }
  os << "</tbody>\n</table>\n</div>\n";
  if (const auto it = svgs.find("overview.svg"); it != svgs.end()) {
    const auto start = it->second.find("<svg");
    os << "<figure id=\"overview\" class=\"overview\">\n"
       << (start == std::string::npos ? std::string() : it->second.substr(start))
       << "\n<figcaption>overview.svg: every strategy (dash) and dtype (colour) against context "
          "length</figcaption></figure>\n";
  }
  os << "</section>\n";
  return os.str();
}

}  // namespace pev::report
