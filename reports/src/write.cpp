// Report writers (write.h): Markdown, JUnit, CSV, gnuplot scripts, HTML, and the directory.

#include "pev/report/write.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <vector>

#include "detail.h"
#include "pev/core/error.h"
#include "pev/core/hex.h"
#include "pev/io/file.h"
#include "pev/report/json.h"

namespace pev::report {

using namespace detail;  // NOLINT(google-build-using-namespace): the shared helpers

namespace {

bool wants_heatmap(const results& r, const check& c) {
  if (c.octaves.empty() || c.octaves.front().rho_by_index.empty()) return false;
  if (r.certification) return c.property.empty();  // every value check of a certificate
  return c.dtype == "fp32";                        // every spec × strategy, at fp32
}

const check* find_check(const results& r, const std::string& spec, const char* st, const char* dt) {
  for (const auto& c : r.checks) {
    if (c.spec_name == spec && c.strategy == st && c.dtype == dt) return &c;
  }
  return nullptr;
}

/// Max abs error over the octaves below `below`.
double max_below(const check& c, std::int64_t below) {
  double m = 0;
  for (const auto& o : c.octaves) {
    if (o.hi <= below) m = std::max(m, o.max_abs);
  }
  return m;
}

}  // namespace

/// The known facts of docs/numerics.md §15.1, §15.2 as this run measured them, one line per RoPE
/// spec: hf fp32 drift against p·2^−24 and its growth per octave, the table-bf16 floor against 2^−9
/// and where the phase error overtakes it, accurate's max ulp error.
std::vector<std::string> detail::headline(const results& r) {
  std::vector<std::string> out;
  std::vector<std::string> specs;
  for (const auto& c : r.checks) {
    if (c.family == "rope") specs.push_back(c.spec_name);
  }
  for (const auto& spec : unique_in_order(specs)) {
    std::string line = spec + ":";
    if (const check* hf = find_check(r, spec, "hf", "fp32"); hf && hf->octaves.size() >= 5) {
      const auto& last = hf->octaves.back();
      const auto& back4 = hf->octaves[hf->octaves.size() - 5];
      const double p = static_cast<double>(last.hi - 1);
      const double growth = std::pow(last.max_abs / back4.max_abs, 0.25);
      line += fmt::format(" hf fp32 max error {} at p ≤ {} = {:.2f}·p·2^-24, ×{:.2f} per octave;",
                          g(last.max_abs), last.hi - 1, last.max_abs / (p * 0x1p-24), growth);
    }
    if (const check* tb = find_check(r, spec, "table-bf16", "fp32"); tb && !tb->octaves.empty()) {
      const double low = max_below(*tb, 4096);
      std::string cross = "nowhere in the range";
      for (const auto& o : tb->octaves) {
        if (o.max_abs > 2 * low) {
          cross = fmt::format("from the octave at p = {}", o.lo);
          break;
        }
      }
      line += fmt::format(
          " table-bf16 fp32 {} below 4096 = {:.2f}·2^-9, doubled by the phase error {};", g(low),
          low / 0x1p-9, cross);
    }
    if (const check* ac = find_check(r, spec, "accurate", "fp32")) {
      line += fmt::format(" accurate fp32 max {} ulp at every position", g(ac->max_ulp_error));
    }
    out.push_back(line);
  }
  return out;
}

std::string summary_markdown(const results& r, std::size_t detailed) {
  if (r.certification) return certificate_markdown(r, select_sites(r, detailed));
  std::ostringstream os;
  const std::size_t fail = failures(r);
  os << "## pev report: " << (fail == 0 ? "all " : "") << r.checks.size() << " checks"
     << (fail == 0 ? " pass" : ", " + std::to_string(fail) + " failed") << "\n\n";
  const provenance& p = r.prov;
  os << "pev " << p.pev_version << " (git " << p.git_revision << "), " << p.compiler << ", "
     << p.fp_flags << "; " << reference_text(p) << "; positions: " << sampling_text(p) << "; seed "
     << p.seed << ".\n\n";
  os << "Pass: max ρ ≤ 1, ρ = |computed − exact| / B with B the strategy's analytic bound "
        "(accurate: 1 ulp of the output type). Abs errors in the value's units; ulps of the "
        "output dtype.\n\n";
  if (!r.specs.empty()) {
    os << "<details><summary>Specs (" << r.specs.size() << ")</summary>\n\n"
       << "| name | family | SPEC | from |\n|---|---|---|---|\n";
    for (const suite_spec& s : r.specs) {
      os << "| " << md_escape(s.name) << " | " << s.family << " | `" << md_escape(s.spec) << "` | "
         << md_escape(s.source) << " |\n";
    }
    os << "\n</details>\n\n";
  }
  for (const auto& n : r.notes) os << "- " << md_escape(n) << "\n";
  if (!r.notes.empty()) os << "\n";
  const auto head = headline(r);
  if (!head.empty()) {
    os << "<details><summary>Headline: drift against the analytic model</summary>\n\n";
    for (const auto& h : head) os << "- " << md_escape(h) << "\n";
    os << "\n</details>\n\n";
  }
  os << "| check | result | max ρ | max abs error | max ulp err (vs exact) | % CR | % faithful | "
        "worst case (position, index) |\n";
  os << "|---|---|---|---|---|---|---|---|\n";
  for (const check& c : r.checks) {
    os << "| " << md_escape(c.id) << " | " << (c.pass ? "✅ pass" : "❌ FAIL") << " | "
       << g(c.max_rho) << " | " << g(c.max_abs) << " | " << g(c.max_ulp_error) << " | "
       << fmt::format("{:.2f}", c.pct_correctly_rounded) << " | "
       << fmt::format("{:.2f}", c.pct_faithful) << " | p=" << c.worst.position << ", "
       << c.worst.component << "[" << c.worst.index << "]: `" << c.worst.got_hex << "` vs `"
       << c.worst.exact_hex << "` |\n";
  }
  return os.str();
}

std::string junit_xml(const results& r) {
  // A report's test cases are named spec (class) × strategy/dtype, unique because spec names
  // are; a certificate's by check id (one check per tensor role or property), and a property
  // that does not apply is skipped, not passed.
  const bool cert = r.certification.has_value();
  const auto skipped =
      static_cast<std::size_t>(std::count_if(r.checks.begin(), r.checks.end(), [](const check& c) {
        return c.property == "not applicable";
      }));
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"" << (cert ? "pev certificate" : "pev report") << "\" tests=\""
     << r.checks.size() << "\" failures=\"" << failures(r) << "\">\n";
  os << " <testsuite name=\"" << (cert ? "pev.certify" : "pev.report") << "\" tests=\""
     << r.checks.size() << "\" failures=\"" << failures(r) << "\" errors=\"0\" skipped=\""
     << skipped << "\">\n";
  for (const check& c : r.checks) {
    os << "  <testcase classname=\"pev." << xml_escape(c.spec_name) << "\" name=\""
       << xml_escape(cert ? c.id : c.strategy + "/" + c.dtype) << "\" time=\"0\">";
    if (cert && !c.property.empty()) {
      if (c.property == "not applicable") {
        os << "<skipped message=\"" << xml_escape(c.note) << "\"/>";
      } else if (c.property == "failed") {
        os << "\n   <failure message=\"" << xml_escape("property failed: " + c.note)
           << "\" type=\"property\">"
           << xml_escape("counterexample:\n" + c.counterexample + "replay: " + c.replay)
           << "</failure>\n  ";
      } else {
        os << "<system-out>" << c.values << " cases passed</system-out>";
      }
      os << "</testcase>\n";
      continue;
    }
    std::string detail =
        fmt::format("max rho {} (bound: {}), max abs {}, worst p={} {}[{}] got {} exact {}",
                    g(c.max_rho), c.bound_name, g(c.max_abs), c.worst.position, c.worst.component,
                    c.worst.index, c.worst.got_hex, c.worst.exact_hex);
    for (const auto& st : c.worst.intermediates) {
      detail += fmt::format("; {} {} exact {}", st.name, st.got_hex, st.exact_hex);
    }
    if (!c.pass) {
      os << "\n   <failure message=\"" << xml_escape("max rho " + g(c.max_rho) + " > 1")
         << "\" type=\"bound\">" << xml_escape(detail) << "</failure>\n  ";
    } else {
      os << "<system-out>" << xml_escape(detail) << "</system-out>";
    }
    os << "</testcase>\n";
  }
  os << " </testsuite>\n</testsuites>\n";
  return os.str();
}

std::map<std::string, std::string> csv_files(const results& r, std::size_t detailed) {
  std::map<std::string, std::string> out;
  const site_selection sel = select_sites(r, detailed);
  {
    std::ostringstream os;
    os << "id,spec_name,strategy,dtype,pass,values,positions,max_abs,max_rho,max_ulp_error,"
          "max_ulp_distance,pct_correctly_rounded,pct_faithful,worst_position,worst_index,"
          "worst_component,worst_got_hex,worst_exact_hex\n";
    for (const check& c : r.checks) {
      os << c.id << ',' << c.spec_name << ',' << c.strategy << ',' << c.dtype << ','
         << (c.pass ? "pass" : "fail") << ',' << c.values << ',' << c.positions << ','
         << d17(c.max_abs) << ',' << d17(c.max_rho) << ',' << d17(c.max_ulp_error) << ','
         << c.max_ulp_distance << ',' << d17(c.pct_correctly_rounded) << ',' << d17(c.pct_faithful)
         << ',' << c.worst.position << ',' << c.worst.index << ',' << c.worst.component << ','
         << c.worst.got_hex << ',' << c.worst.exact_hex << '\n';
    }
    out["checks.csv"] = os.str();
  }
  {
    std::ostringstream os;
    os << "id,lo,hi,positions,values,max_abs,p99_abs,max_bound,max_rho\n";
    for (const check& c : r.checks) {
      for (const octave& o : c.octaves) {
        os << c.id << ',' << o.lo << ',' << o.hi << ',' << o.positions << ',' << o.values << ','
           << d17(o.max_abs) << ',' << d17(o.p99_abs) << ',' << d17(o.max_bound) << ','
           << d17(o.max_rho) << '\n';
      }
    }
    out["octaves.csv"] = os.str();
  }
  for (const check& c : r.checks) {
    if (!sel.shows(c)) continue;  // a trace's sites left out: their figures are in octaves.csv
    // Plot a: per octave, x = the octave's last position.
    std::ostringstream os;
    os << "last_position,max_abs,p99_abs,max_bound\n";
    for (const octave& o : c.octaves) {
      os << (o.hi - 1) << ',' << d17(o.max_abs) << ',' << d17(o.p99_abs) << ',' << d17(o.max_bound)
         << '\n';
    }
    out[drift_csv_name(c)] = os.str();
    if (wants_heatmap(r, c)) {
      // Plot b: x = index, y = log2 of the octave's end, value = max ρ.
      std::ostringstream hm;
      hm << "# index,log2_octave_end,max_rho\n";
      for (const octave& o : c.octaves) {
        const double y = std::log2(static_cast<double>(o.hi));
        for (std::size_t i = 0; i < o.rho_by_index.size(); ++i) {
          // Non-finite ρ (a value where the bound is 0) is drawn as 10^9.
          const double v = std::isfinite(o.rho_by_index[i]) ? o.rho_by_index[i] : 1e9;
          hm << i << ',' << d17(y) << ',' << d17(v) << '\n';
        }
        hm << '\n';
      }
      out[heatmap_csv_name(c)] = hm.str();
    }
  }
  {
    // Plot c: percentage of values per ulp bucket, per strategy × dtype.
    std::ostringstream os;
    os << "strategy,dtype";
    for (const char* b : kUlpBucketLabels) os << ',' << b;
    os << '\n';
    for (const auto& st : unique_in_order([&] {
           std::vector<std::string> v;
           for (const auto& c : r.checks) v.push_back(c.strategy);
           return v;
         }())) {
      for (const char* dt : {"fp32", "fp16", "bf16"}) {
        std::array<std::uint64_t, kUlpBuckets> sum{};
        std::uint64_t total = 0;
        for (const auto& c : r.checks) {
          if (c.strategy != st || c.dtype != dt) continue;
          for (int b = 0; b < kUlpBuckets; ++b)
            sum[std::size_t(b)] += c.ulp_histogram[std::size_t(b)];
          total += c.values;
        }
        if (total == 0) continue;
        os << st << ',' << dt;
        for (auto n : sum) os << ',' << d17(100.0 * double(n) / double(total));
        os << '\n';
      }
    }
    out["ulp_histogram.csv"] = os.str();
    // One file per strategy, buckets as rows (gnuplot's clustered histogram).
    for (const auto& st : unique_in_order([&] {
           std::vector<std::string> v;
           for (const auto& c : r.checks) v.push_back(c.strategy);
           return v;
         }())) {
      std::ostringstream h;
      h << "bucket,fp32,fp16,bf16\n";
      std::array<std::array<double, kUlpBuckets>, 3> pct{};
      const char* dts[] = {"fp32", "fp16", "bf16"};
      for (int d = 0; d < 3; ++d) {
        std::array<std::uint64_t, kUlpBuckets> sum{};
        std::uint64_t total = 0;
        for (const auto& c : r.checks) {
          if (c.strategy != st || c.dtype != dts[d]) continue;
          for (int b = 0; b < kUlpBuckets; ++b)
            sum[std::size_t(b)] += c.ulp_histogram[std::size_t(b)];
          total += c.values;
        }
        for (int b = 0; b < kUlpBuckets; ++b) {
          pct[std::size_t(d)][std::size_t(b)] =
              total ? 100.0 * double(sum[std::size_t(b)]) / double(total) : 0.0;
        }
      }
      for (int b = 0; b < kUlpBuckets; ++b) {
        h << kUlpBucketLabels[std::size_t(b)];
        for (int d = 0; d < 3; ++d) h << ',' << d17(pct[std::size_t(d)][std::size_t(b)]);
        h << '\n';
      }
      out["ulp_histogram_" + slug(st) + ".csv"] = h.str();
    }
  }
  {
    std::ostringstream all;
    all << "spec_name,strategy,dtype,offset,position,max_drift\n";
    for (const auto& s : r.invariance) {
      std::ostringstream os;
      os << "position,max_drift\n";
      for (std::size_t k = 0; k < s.position.size(); ++k) {
        os << s.position[k] << ',' << d17(s.max_drift[k]) << '\n';
        all << s.spec_name << ',' << s.strategy << ',' << s.dtype << ',' << s.offset << ','
            << s.position[k] << ',' << d17(s.max_drift[k]) << '\n';
      }
      out["invariance_" + slug(s.spec_name + "/" + s.strategy + "/" + s.dtype) + ".csv"] = os.str();
    }
    out["invariance.csv"] = all.str();
  }
  for (const auto& w : r.wavelengths) {
    std::ostringstream os;
    os << "pair,plain_wavelength,scaled_wavelength\n";
    for (std::size_t i = 0; i < w.scaled.size(); ++i) {
      os << i << ',' << d17(i < w.plain.size() ? w.plain[i] : 0.0) << ',' << d17(w.scaled[i])
         << '\n';
    }
    out["wavelengths_" + slug(w.spec_name) + ".csv"] = os.str();
  }
  return out;
}

std::string detail::heatmap_script(const check& c, const std::string& dd) {
  std::ostringstream os;
  const auto n_index = c.octaves.front().rho_by_index.size();
  os << kTerminal << "unset key\n"
     << fmt::format("set xrange [-0.5:{}.5]\nset yrange [{}:{}]\n", n_index - 1,
                    std::log2(double(c.octaves.front().hi)) - 0.5,
                    std::log2(double(c.octaves.back().hi)) + 0.5)
     << "set title '" << c.id << ": max ρ = error / bound per position octave and pair'\n"
     << "set xlabel 'frequency pair index i'\nset ylabel 'position octave (log2 of its end)'\n"
     << "set cblabel 'max ρ (dimensionless; ≤ 1 passes)'\n"
     << fmt::format("set cbrange [0:{}]\n",
                    c.max_rho > 1 && std::isfinite(c.max_rho) ? g(c.max_rho) : "1")
     << "set palette defined (0 '#ffffff', 0.5 '#fdae61', 1 '#d7191c')\n"
     << "plot '" << dd << heatmap_csv_name(c) << "' using 1:2:3 with image\n";
  return os.str();
}

std::map<std::string, std::string> plot_scripts(const results& r, const std::string& data_dir,
                                                std::size_t detailed) {
  if (r.certification) return certificate_plot_scripts(r, data_dir, select_sites(r, detailed));
  std::map<std::string, std::string> out;
  const std::string dd = data_dir.empty() ? "" : data_dir + "/";
  // (a) drift per spec × strategy: one colour per dtype; max solid, p99 dotted, bound dashed.
  std::vector<std::string> pairs;
  for (const auto& c : r.checks) {
    if (c.family != "t5") pairs.push_back(c.spec_name + "\x1f" + c.strategy);  // t5: integers
  }
  for (const auto& key : unique_in_order(pairs)) {
    const std::string spec = key.substr(0, key.find('\x1f'));
    const std::string st = key.substr(key.find('\x1f') + 1);
    std::ostringstream series;
    for (const auto& c : r.checks) {
      if (c.spec_name != spec || c.strategy != st) continue;
      const std::string f = "'" + dd + drift_csv_name(c) + "'";
      const std::string col = dtype_colour(c.dtype);
      auto add = [&](const std::string& s) {
        if (!series.str().empty()) series << ", \\\n     ";
        series << f << " skip 1 " << s;
      };
      // Zero errors have no place on a log axis: they are left out of the lines.
      if (any_positive(c.octaves, [](const octave& o) { return o.max_abs; })) {
        add("using 1:($2>0?$2:1/0) with linespoints lw 2 pt 7 ps 0.6 lc rgb '" + col + "' title '" +
            c.dtype + " max'");
      }
      if (any_positive(c.octaves, [](const octave& o) { return o.p99_abs; })) {
        add("using 1:($3>0?$3:1/0) with lines lw 1 dt 3 lc rgb '" + col + "' title '" + c.dtype +
            " p99'");
      }
      if (any_positive(c.octaves, [](const octave& o) { return o.max_bound; })) {
        add("using 1:($4>0?$4:1/0) with lines lw 1.5 dt 2 lc rgb '" + col + "' title '" + c.dtype +
            " bound'");
      }
    }
    if (series.str().empty()) continue;
    // Reference lines of docs/numerics.md §15.4 for values of magnitude ≤ 1 (cos/sin, PE): the
    // fp32 angle floor p·2^−24 and the ½ ulp below 1 of each 16-bit type involved.
    const auto one = std::find_if(r.checks.begin(), r.checks.end(), [&](const check& c) {
      return c.spec_name == spec && c.strategy == st;
    });
    if (one->family == "rope" || one->family == "sinusoidal") {
      series << ", \\\n     x*2**-24 with lines lw 1 dt 4 lc rgb '#7f7f7f' title 'p·2^{-24}'";
      std::set<std::string> halves;
      for (const auto& c : r.checks) {
        if (c.spec_name == spec && c.strategy == st && c.dtype != "fp32") halves.insert(c.dtype);
      }
      if (st == "table-fp16") halves.insert("fp16");
      if (st == "table-bf16") halves.insert("bf16");
      for (const auto& h : halves) {
        series << ", \\\n     " << (h == "fp16" ? "2**-12" : "2**-9")
               << " with lines lw 1 dt 5 lc rgb '" << dtype_colour(h) << "' title '" << h
               << " ½ ulp below 1'";
      }
    }
    std::ostringstream os;
    os << kTerminal << "set logscale xy 2\nset format x '2^{%L}'\nset format y '10^{%L}'\n"
       << "set logscale y 10\n"
       << "set title '" << spec << ", strategy " << st
       << ": absolute error vs exact, per position octave'\n"
       << "set xlabel 'position p (tokens; last position of each octave)'\n"
       << "set ylabel 'absolute error |computed − exact| (value units)'\n"
       << "plot " << series.str() << "\n";
    out["drift_" + slug(spec + "/" + st) + ".svg"] = os.str();
  }
  // (b) heatmaps of max ρ over octave × frequency index.
  for (const auto& c : r.checks) {
    if (wants_heatmap(r, c)) out["heatmap_" + slug(c.id) + ".svg"] = heatmap_script(c, dd);
  }
  // (c) ulp histogram per strategy, clustered by dtype.
  {
    std::vector<std::string> sts;
    for (const auto& c : r.checks) sts.push_back(c.strategy);
    for (const auto& st : unique_in_order(sts)) {
      std::ostringstream os;
      os << kTerminal << "set style data histograms\nset style histogram clustered gap 1\n"
         << "set style fill solid 0.85 border -1\nset boxwidth 0.9\nset key autotitle columnhead\n"
         << "set title 'strategy " << st
         << ": ulp error vs exact, all checks (ulps of the output dtype)'\n"
         << "set xlabel 'ulp error bucket (ulps of the output dtype)'\n"
         << "set ylabel 'values (% of the dtype''s values)'\nset yrange [0:100]\n"
         << "plot '" << dd << "ulp_histogram_" << slug(st) << ".csv' using 2:xtic(1) lc rgb '"
         << dtype_colour("fp32") << "' title 'fp32', '' using 3 lc rgb '" << dtype_colour("fp16")
         << "' title 'fp16', '' using 4 lc rgb '" << dtype_colour("bf16") << "' title 'bf16'\n";
      out["ulp_histogram_" + slug(st) + ".svg"] = os.str();
    }
  }
  // (d) invariance drift per spec: colour = dtype, dash type and point = strategy. Only points
  // a log-log plot shows (m > 0, drift > 0); a sweep whose largest position is below 17 has
  // only m = 0, and no plot.
  const auto plottable = [](const invariance_series& s) {
    for (std::size_t k = 0; k < s.position.size() && k < s.max_drift.size(); ++k) {
      if (s.position[k] > 0 && s.max_drift[k] > 0 && std::isfinite(s.max_drift[k])) return true;
    }
    return false;
  };
  {
    std::vector<std::string> specs;
    for (const auto& s : r.invariance) specs.push_back(s.spec_name);
    for (const auto& spec : unique_in_order(specs)) {
      if (std::none_of(r.invariance.begin(), r.invariance.end(),
                       [&](const auto& s) { return s.spec_name == spec && plottable(s); })) {
        continue;
      }
      std::ostringstream os;
      os << kTerminal << "set logscale xy\nset format x '2^{%L}'\nset format y '10^{%L}'\n"
         << "set logscale x 2\nset key outside right top box opaque font ',9'\n"
         << "set title '" << spec
         << ": relative-position drift |<R(m)q, R(m+16)k> − <R(0)q, R(16)k>|'\n"
         << "set xlabel 'query position m (tokens)'\n"
         << "set ylabel 'score drift (absolute; |q|, |k| ≤ 1)'\nplot ";
      bool first = true;
      for (const auto& s : r.invariance) {
        if (s.spec_name != spec || !plottable(s)) continue;
        if (!first) os << ", \\\n     ";
        first = false;
        os << "'" << dd << "invariance_" << slug(s.spec_name + "/" + s.strategy + "/" + s.dtype)
           << ".csv' skip 1 using ($1>0?$1:1/0):($2>0?$2:1/0) with linespoints lw 1.5 dt "
           << strategy_dash(s.strategy) << " pt " << strategy_point(s.strategy)
           << " ps 0.5 lc rgb '" << dtype_colour(s.dtype) << "' title '" << s.strategy << " "
           << s.dtype << "'";
      }
      os << "\n";
      out["invariance_" + slug(spec) + ".svg"] = os.str();
    }
  }
  // (e) wavelengths.
  for (const auto& w : r.wavelengths) {
    if (!any_positive(w.scaled) || !any_positive(w.plain)) continue;
    std::ostringstream os;
    os << kTerminal << "set logscale y 10\nset format y '10^{%L}'\n"
       << "set title '" << w.spec_name << ": effective wavelength 2π/θ_i per pair'\n"
       << "set xlabel 'frequency pair index i'\nset ylabel 'wavelength (tokens)'\n"
       << "plot '" << dd << "wavelengths_" << slug(w.spec_name)
       << ".csv' skip 1 using 1:($2>0?$2:1/0) with lines lw 2 dt 2 lc rgb '#7f7f7f' title "
          "'plain RoPE (same θ, dim)', '' skip 1 using 1:($3>0?$3:1/0) with lines lw 2 lc "
          "rgb '#9467bd' title 'this spec'\n";
    out["wavelength_" + slug(w.spec_name) + ".svg"] = os.str();
  }
  // The overview: the answer's error against context length (answer.cpp), its data inline.
  if (std::string s = overview_script(r); !s.empty()) out["overview.svg"] = std::move(s);
  return out;
}

namespace {

std::string shell_quote(const std::string& s) {
  std::string o = "'";
  for (char c : s) {
    if (c == '\'') {
      o += "'\\''";
    } else {
      o += c;
    }
  }
  return o + "'";
}

/// Runs gnuplot on `script` (a file, relative to `dir`) in `dir`, returning the SVG it prints.
/// Throws pev::error naming the script (relative: the directory may be a staging one), gnuplot's
/// exit status and its messages when it prints none.
std::string run_gnuplot(const std::string& gnuplot, const std::filesystem::path& dir,
                        const std::string& script) {
  const std::string cmd =
      "cd " + shell_quote(dir.string()) + " && " + shell_quote(gnuplot) + " " + shell_quote(script);
  // gnuplot's warnings (e.g. an all-zero colour range) stay out of pev's stderr; on failure its
  // messages are collected by a second run for the error.
  FILE* f = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (!f) throw error("gnuplot: cannot run '" + gnuplot + "'");
  std::string outp;
  char buf[65536];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) outp.append(buf, n);
  const int rc = pclose(f);
  if (rc != 0 || outp.find("<svg") == std::string::npos) {
    std::string msg;
    if (FILE* e = popen((cmd + " 2>&1 >/dev/null").c_str(), "r")) {
      while ((n = std::fread(buf, 1, sizeof buf, e)) > 0 && msg.size() < 4096) msg.append(buf, n);
      pclose(e);
    }
    // The first lines of its messages are enough to tell why (a missing gnuplot: the shell's
    // "not found", exit status 127).
    if (msg.size() > 400) msg = msg.substr(0, 400) + " …";
    while (!msg.empty() && std::isspace(static_cast<unsigned char>(msg.back()))) msg.pop_back();
    const std::string status =
        rc == -1 ? "not run"
                 : (WIFEXITED(rc) ? "exit status " + std::to_string(WEXITSTATUS(rc))
                                  : "wait status " + std::to_string(rc));
    throw error("gnuplot failed on " + script + " (" + status + ")" +
                (msg.empty() ? std::string() : ": " + msg));
  }
  return outp;
}

/// Runs one gnuplot on the script `driver` (relative to `dir`) in `dir`; whether it exited 0. Its
/// messages stay out of pev's stderr (the per-script run after a failure collects them).
bool render_all(const std::string& gnuplot, const std::filesystem::path& dir,
                const std::string& driver) {
  const std::string cmd = "cd " + shell_quote(dir.string()) + " && " + shell_quote(gnuplot) + " " +
                          shell_quote(driver) + " >/dev/null 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return false;
  return pclose(f) == 0;
}

}  // namespace

std::string file_stem(const std::string& name) { return slug(name); }

std::vector<skipped_plot> write_report(const results& r, const std::filesystem::path& dir,
                                       const write_options& o) {
  std::vector<skipped_plot> skipped;
  io::write_directory_atomic(dir, [&](const std::filesystem::path& staging) {
    skipped = write_report_files(r, staging, o);
  });
  return skipped;
}

std::vector<skipped_plot> write_report_files(const results& r, const std::filesystem::path& dir,
                                             const write_options& o) {
  std::error_code ec;
  std::filesystem::create_directories(dir / "data", ec);
  if (!ec) std::filesystem::create_directories(dir / "plots", ec);
  if (ec) throw error(dir.string() + ": cannot create the report directory: " + ec.message());
  for (const auto& [name, text] : csv_files(r, o.detailed)) {
    io::write_file_atomic(dir / "data" / name, text);
  }
  // The plots first: one gnuplot cannot draw is skipped, and the JSON and the page say so
  // (results::plots_skipped) — a plot never decides a verdict nor loses one.
  std::map<std::string, std::string> svgs;
  std::vector<skipped_plot> skipped;
  if (!o.gnuplot.empty()) {
    const auto scripts = plot_scripts(r, "data", o.detailed);
    // The scripts are kept next to their plots, so a reader can re-render one: `gnuplot
    // plots/x.gp` from the report directory (to stdout), or all: `gnuplot plots/render.gp`. One
    // gnuplot process renders them all (its start-up dominates a small plot), each script from a
    // reset state into its SVG.
    std::string driver;
    for (const auto& [name, script] : scripts) {
      const std::string gp = "plots/" + name.substr(0, name.size() - 4) + ".gp";
      io::write_file_atomic(dir / gp, script);
      driver += "reset\nset output 'plots/" + name + "'\nload '" + gp + "'\nset output\n";
    }
    if (!scripts.empty()) io::write_file_atomic(dir / "plots" / "render.gp", driver);
    if (!scripts.empty() && render_all(o.gnuplot, dir, "plots/render.gp")) {
      for (const auto& [name, script] : scripts) {
        std::string svg = io::read_file(dir / "plots" / name);
        if (svg.find("<svg") == std::string::npos || svg.find("</svg>") == std::string::npos) {
          svgs.clear();
          break;
        }
        svgs[name] = std::move(svg);
      }
    }
    if (svgs.size() != scripts.size()) {
      // A failure: each script on its own, so that the note names the one that fails and the
      // others are drawn.
      svgs.clear();
      for (const auto& [name, script] : scripts) {
        const std::string gp = "plots/" + name.substr(0, name.size() - 4) + ".gp";
        std::error_code rm;
        std::filesystem::remove(dir / "plots" / name, rm);  // a partial SVG of the joint run
        try {
          svgs[name] = run_gnuplot(o.gnuplot, dir, gp);
        } catch (const error& e) {
          skipped.push_back({"plots/" + name, e.what()});
          continue;
        }
        io::write_file_atomic(dir / "plots" / name, svgs[name]);
      }
    }
  }
  results with_skipped;
  const results* w = &r;
  if (skipped != r.plots_skipped) {
    with_skipped = r;
    with_skipped.plots_skipped = skipped;
    w = &with_skipped;
  }
  // A certificate's JSON is certificate.json (the same writer, with its certification block).
  io::write_file_atomic(dir / (r.certification ? "certificate.json" : "report.json"), to_json(*w));
  io::write_file_atomic(dir / "summary.md", summary_markdown(*w, o.detailed));
  io::write_file_atomic(dir / "junit.xml", junit_xml(*w));
  io::write_file_atomic(dir / "index.html", index_html(*w, svgs, o.detailed));
  return skipped;
}

}  // namespace pev::report
