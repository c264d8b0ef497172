#include "pev/app/certify.h"

#include "pev/app/choices.h"
#include "pev/core/error.h"
#include "pev/io/file.h"
#include "pev/metric/libm.h"
#include "pev/report/write.h"

namespace pev::app {

void set_certify_options(certify::options& o, const std::string& reference, const std::string& libm,
                         std::optional<double> max_trig_ulp) {
  o.mpfr_reference = parse_mpfr_reference(reference);
  o.libm = &parse_libm(libm);
  if (max_trig_ulp && !(*max_trig_ulp >= 0.5 && *max_trig_ulp < 1e6)) {
    throw error("--max-trig-ulp: expected a number of ulps in [0.5, 1e6)");
  }
  o.max_trig_ulp = max_trig_ulp;
}

std::vector<report::skipped_plot> write_certificate(const certify::certificate& c,
                                                    const std::filesystem::path& dir) {
  std::vector<report::skipped_plot> skipped;
  io::write_directory_atomic(dir, [&](const std::filesystem::path& staging) {
    skipped = report::write_report_files(c, staging);
  });
  return skipped;
}

void warn_skipped_plots(const std::vector<report::skipped_plot>& skipped) {
  for (const auto& p : skipped) warn_to_stderr("plot " + p.file + " not drawn: " + p.reason);
}

}  // namespace pev::app
