#include "pev/compare/bounds.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "pev/core/error.h"
#include "pev/core/simd.h"
#include "pev/metric/error_model.h"

namespace pev::compare {

namespace {

// table_row's loops (table_form's arithmetic; the branches on the form are loop-invariant and
// taken out of the loops, so that each compiles to straight vector code).
PEV_VECTOR_LOOPS void trig_loop(const impl::table_form& f, const double* d, const double* y,
                                double* out, std::size_t n) {
  if (f.m == 1 && f.pipeline_m.x == 1 && f.pipeline_m.e == 0) {
    impl::table_form g = f;  // c = y/1 = y: the same values without the division
    g.m = 0;
    for (std::size_t k = 0; k < n; ++k) out[k] = g.trig(d[k], y[k]);
  } else {
    for (std::size_t k = 0; k < n; ++k) out[k] = f.trig(d[k], y[k]);
  }
}

PEV_VECTOR_LOOPS void path_loop(const impl::table_form& f, const double* B, const double* y,
                                double* out, std::size_t n) {
  if (!f.stored && !f.rounded_out) {
    std::copy(B, B + n, out);
  } else if (f.stored && !f.rounded_out) {
    for (std::size_t k = 0; k < n; ++k) {
      out[k] = B[k] + metric::ulp_at_finite(y[k] + B[k], f.storage) / 2;
    }
  } else {
    for (std::size_t k = 0; k < n; ++k) out[k] = f.path(B[k], y[k]);
  }
}

PEV_VECTOR_LOOPS void ulp_loop(format fmt, const double* y, double* out, std::size_t n) {
  for (std::size_t k = 0; k < n; ++k) out[k] = metric::ulp_at_finite(y[k], fmt);
}

}  // namespace

rope_bounds::rope_bounds(const spec::rope& s, std::optional<std::int64_t> seq, double m,
                         std::vector<named_bound> bounds)
    : bounds_(std::move(bounds)), m_(m) {
  for (const named_bound& b : bounds_) {
    contracts_.push_back(
        b.k == named_bound::kind::contract
            ? std::make_shared<impl::rope_contract>(s, b.contract, seq, m, *b.lib, b.arithmetic)
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

void rope_bounds::table_row(std::span<const std::int64_t> pair_of, std::span<const double> abs_y,
                            format out, std::span<double> b) {
  const std::size_t n = abs_y.size();
  if (pair_of.size() != n || b.size() != n * bounds_.size()) {
    throw error("compare::rope_bounds::table_row: pairs, values and bounds differ in size");
  }
  row_dtheta_.resize(n);
  row_trig_.resize(n);
  std::optional<std::size_t> trig_of;  // the contract whose trig part row_trig_ holds
  for (std::size_t j = 0; j < bounds_.size(); ++j) {
    double* bj = b.data() + j * n;
    switch (bounds_[j].k) {
      case named_bound::kind::drift_free:
        std::fill(bj, bj + n, 2 * metric::ulp_at(m_, out));
        break;
      case named_bound::kind::one_ulp:
        ulp_loop(out, abs_y.data(), bj, n);
        break;
      case named_bound::kind::contract: {
        const impl::table_form f = contracts_[j]->table_form_for(out);
        if (f.one_ulp) {
          ulp_loop(out, abs_y.data(), bj, n);
          break;
        }
        if (!trig_of || !contracts_[*trig_of]->same_trig(*contracts_[j])) {
          for (std::size_t k = 0; k < n; ++k) {
            row_dtheta_[k] = dtheta_[j][static_cast<std::size_t>(pair_of[k])];
          }
          trig_loop(f, row_dtheta_.data(), abs_y.data(), row_trig_.data(), n);
          trig_of = j;
        }
        path_loop(f, row_trig_.data(), abs_y.data(), bj, n);
        break;
      }
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
