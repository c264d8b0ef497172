#include "pev/compare/bounds.h"

#include <cmath>
#include <memory>

#include "pev/metric/error_model.h"

namespace pev::compare {

rope_bounds::rope_bounds(const spec::rope& s, std::optional<std::int64_t> seq, double m,
                         std::vector<named_bound> bounds)
    : bounds_(std::move(bounds)), m_(m) {
  for (const named_bound& b : bounds_) {
    contracts_.push_back(
        b.k == named_bound::kind::contract
            ? std::make_unique<impl::rope_contract>(s, b.contract, seq, m, *b.lib, b.arithmetic)
            : nullptr);
  }
  dtheta_.resize(bounds_.size());
}

std::vector<std::string> rope_bounds::names() const {
  std::vector<std::string> v;
  for (const auto& b : bounds_) v.push_back(b.name);
  return v;
}

std::optional<std::size_t> rope_bounds::find(std::string_view name) const {
  for (std::size_t k = 0; k < bounds_.size(); ++k) {
    if (bounds_[k].name == name) return k;
  }
  return std::nullopt;
}

void rope_bounds::at_position(std::int64_t p) {
  for (std::size_t k = 0; k < bounds_.size(); ++k) {
    if (contracts_[k]) contracts_[k]->angle_errors(p, dtheta_[k]);
  }
}

void rope_bounds::at_positions(std::span<const std::int64_t> stream_positions,
                               std::span<const std::int64_t> stream_of_pair) {
  std::vector<double> row;
  for (std::size_t k = 0; k < bounds_.size(); ++k) {
    if (!contracts_[k]) continue;
    dtheta_[k].resize(stream_of_pair.size());
    for (std::size_t st = 0; st < stream_positions.size(); ++st) {
      contracts_[k]->angle_errors(stream_positions[st], row);
      for (std::size_t i = 0; i < stream_of_pair.size() && i < row.size(); ++i) {
        if (static_cast<std::size_t>(stream_of_pair[i]) == st) dtheta_[k][i] = row[i];
      }
    }
  }
}

void rope_bounds::table(std::int64_t i, double y, format out, std::span<double> b) const {
  const auto u = static_cast<std::size_t>(i);
  for (std::size_t k = 0; k < bounds_.size(); ++k) {
    switch (bounds_[k].k) {
      case named_bound::kind::contract:
        b[k] = contracts_[k]->table_bound_at(dtheta_[k][u], y, out);
        break;
      case named_bound::kind::drift_free:
        b[k] = 2 * metric::ulp_at(m_, out);
        break;
      case named_bound::kind::one_ulp:
        b[k] = metric::ulp_at(std::fabs(y), out);
        break;
    }
  }
}

void rope_bounds::rotation(std::int64_t i, double x0, double x1, double y, format out,
                           std::span<double> b) const {
  if (i < 0) {  // pass-through dims are copies: exact (or, claimed exact, within one ulp)
    for (std::size_t k = 0; k < bounds_.size(); ++k) {
      b[k] = bounds_[k].k == named_bound::kind::one_ulp ? metric::ulp_at(std::fabs(y), out) : 0;
    }
    return;
  }
  const auto u = static_cast<std::size_t>(i);
  const double ay = std::fabs(y);
  for (std::size_t k = 0; k < bounds_.size(); ++k) {
    switch (bounds_[k].k) {
      case named_bound::kind::contract:
        b[k] = contracts_[k]->rotation_bound_at(dtheta_[k][u], x0, x1, ay, out);
        break;
      case named_bound::kind::drift_free:
        b[k] = 2 * metric::ulp_at(m_ * (std::fabs(x0) + std::fabs(x1)), out);
        break;
      case named_bound::kind::one_ulp:
        b[k] = metric::ulp_at(ay, out);
        break;
    }
  }
}

}  // namespace pev::compare
