// What the layout readers share (layout_evidence.h).

#include "layout_evidence.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace pev::certify::detail {

bool is_role_name(const std::string& n) {
  static const std::set<std::string> roles = {"positions",
                                              "position_ids",
                                              "qk_positions",
                                              "inv_freq",
                                              "attention_factor",
                                              "attention_scaling",
                                              "mscale",
                                              "q_in",
                                              "q_out",
                                              "k_in",
                                              "k_out"};
  return roles.count(n) > 0;
}

std::vector<std::int64_t> drop_ones(const std::vector<std::int64_t>& shape, std::size_t keep) {
  std::vector<std::int64_t> v;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1 && i + keep < shape.size()) continue;
    v.push_back(shape[i]);
  }
  return v;
}

agreement ratio_agreement(std::vector<double> ratios) {
  agreement a;
  std::vector<double> finite;
  for (double r : ratios) {
    if (std::isfinite(r)) finite.push_back(r);
  }
  a.samples = ratios.size();
  a.off = ratios.size() - finite.size();
  if (finite.empty()) return a;
  std::nth_element(finite.begin(), finite.begin() + static_cast<std::ptrdiff_t>(finite.size() / 2),
                   finite.end());
  const double median = finite[finite.size() / 2];
  for (double r : finite) {
    if (!(std::fabs(r - median) <= median / 8)) ++a.off;
  }
  return a;
}

}  // namespace pev::certify::detail
