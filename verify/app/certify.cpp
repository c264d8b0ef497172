#include "pev/app/certify.h"

#include "pev/core/error.h"
#include "pev/io/file.h"
#include "pev/metric/libm.h"
#include "pev/report/write.h"

namespace pev::app {

void set_certify_options(certify::options& o, const std::string& reference, const std::string& libm,
                         std::optional<double> max_trig_ulp) {
  if (reference != "fast" && reference != "mpfr") {
    throw error("--reference: expected fast or mpfr, got '" + reference + "'");
  }
  o.mpfr_reference = reference == "mpfr";
  if (libm == "any") {
    o.libm = &metric::kAnyConforming;
  } else if (libm == "one-ulp") {
    o.libm = &metric::kOneUlp;
  } else if (libm == "glibc") {
    o.libm = &metric::kGlibc;
  } else if (libm == "cr") {
    o.libm = &metric::kCorrectlyRounded;
  } else {
    throw error("--libm: expected any, one-ulp, glibc or cr, got '" + libm + "'");
  }
  if (max_trig_ulp && !(*max_trig_ulp >= 0.5 && *max_trig_ulp < 1e6)) {
    throw error("--max-trig-ulp: expected a number of ulps in [0.5, 1e6)");
  }
  o.max_trig_ulp = max_trig_ulp;
}

void write_certificate(const certify::certificate& c, const std::filesystem::path& dir) {
  io::write_directory_atomic(
      dir, [&](const std::filesystem::path& staging) { report::write_report_files(c, staging); });
}

}  // namespace pev::app
