#pragma once
// What two certificates (or reports) differ in, field by field (docs/certify.md §7): how `pev
// verify` compares a certificate with its re-run, and how the tests compare a merged certificate
// with the unsharded run's.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace pev::report {

/// The fields (JSON paths, e.g. "/checks[cos]/max_rho") where the JSON texts `recorded` and `now`
/// differ (pev::error naming `source` for text that is not JSON), each
/// with both values ("/grade: \"faithful\" recorded, \"correctly-rounded\" now"), in document
/// order, at most `max` of them; fields whose pointer is in `skip` (with everything below them)
/// are not compared (pointers with indices: "/checks/0/seconds"). Arrays of objects with an "id"
/// name their elements by it in the paths.
std::vector<std::string> differences(std::string_view recorded, std::string_view now,
                                     const std::vector<std::string>& skip, std::size_t max = 20,
                                     const std::string& source = "certificate.json");

/// What runs of one certification may differ in (the wall time, when and where it ran, the
/// merge's bookkeeping), which differences() skips when comparing a certificate with its re-run.
const std::vector<std::string>& run_specific_fields();

}  // namespace pev::report
