#include "pev/compare/bounds.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "pev/core/error.h"
#include "pev/core/simd.h"
#include "pev/metric/error_model.h"

namespace pev::compare {

namespace {

// table_rows' loops (table_form's arithmetic; the branches on the form are loop-invariant and
// taken out of the loops, so that each compiles to straight vector code).
/// std::min(a, b) of non-negative doubles (not −0, not NaN), on their encodings, which order like
/// the values there: an integer select vectorises where a floating-point one (whose comparison
/// may trap) does not.
[[gnu::always_inline]] inline double min_nonneg(double a, double b) {
  const auto x = std::bit_cast<std::uint64_t>(a), y = std::bit_cast<std::uint64_t>(b);
  const std::uint64_t take_b = -static_cast<std::uint64_t>(y < x);
  return std::bit_cast<double>(x ^ ((x ^ y) & take_b));
}

template <bool Divide, bool TimesOne>
[[gnu::always_inline]] inline void trig_values(const impl::table_form& f, const double* d,
                                               const double* y, double* out, std::size_t n) {
  const double ulps = f.trig_ulps, top = 1.0 - 0x1p-25, m = f.m;
  const double me = f.pipeline_m.e, mm = f.pipeline_m.x + me;
  for (std::size_t k = 0; k < n; ++k) {
    double c = y[k];  // y/1 = y
    if constexpr (Divide) c = y[k] / m;
    const double dd = min_nonneg(d[k], 2.0);
    const double bcs = dd + ulps * metric::ulp_at_finite(min_nonneg(c + dd, top), metric::kF32);
    if constexpr (TimesOne) {
      out[k] = bcs;
    } else {
      out[k] = mm * bcs + me * c + metric::ulp_at_finite(mm * (c + bcs), metric::kF32) / 2;
    }
  }
}

PEV_VECTOR_LOOPS void trig_loop(const impl::table_form& f, const double* d, const double* y,
                                double* out, std::size_t n) {
  const bool times_one = f.pipeline_m.x == 1.0 && f.pipeline_m.e == 0.0;
  const bool divide = f.m > 0 && f.m != 1;
  if (divide) {
    times_one ? trig_values<true, true>(f, d, y, out, n)
              : trig_values<true, false>(f, d, y, out, n);
  } else {
    times_one ? trig_values<false, true>(f, d, y, out, n)
              : trig_values<false, false>(f, d, y, out, n);
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

std::vector<std::size_t> order_by_name(std::span<const std::string> names,
                                       std::span<const std::string> known,
                                       std::span<const std::string> entries,
                                       std::string_view what) {
  const auto has = [](std::span<const std::string> v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  for (std::size_t k = 0; k < entries.size(); ++k) {
    if (!has(known, entries[k])) {
      throw error(std::string(what) + ": no bound is called '" + entries[k] + "'");
    }
    if (has(entries.first(k), entries[k])) {
      throw error(std::string(what) + ": bound '" + entries[k] + "' given twice");
    }
  }
  std::vector<std::size_t> order;
  for (const std::string& name : names) {
    const auto it = std::find(entries.begin(), entries.end(), name);
    if (it == entries.end()) throw error(std::string(what) + ": no bound '" + name + "'");
    order.push_back(static_cast<std::size_t>(it - entries.begin()));
  }
  return order;
}

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

void rope_bounds::table_rows(std::span<const std::int64_t> positions,
                             std::span<const std::int64_t> pair_of, std::span<const double> abs_y,
                             format out, std::span<double> b) {
  const std::size_t R = positions.size(), n = pair_of.size(), N = abs_y.size();
  if (R * n == 0 || N % (R * n) != 0 || b.size() != N * bounds_.size()) {
    throw error("compare::rope_bounds::table_rows: positions, pairs, values and bounds differ");
  }
  row_trig_.resize(N);
  if (!forms_out_ || forms_out_->p != out.p || forms_out_->emin != out.emin) {
    // Each contract's form for this output format, and whether its trig part is an earlier
    // contract's (evaluated once per row for both).
    forms_.assign(bounds_.size(), {});
    shares_trig_.assign(bounds_.size(), false);
    std::optional<std::size_t> last;
    for (std::size_t j = 0; j < bounds_.size(); ++j) {
      if (!contracts_[j]) continue;
      forms_[j] = contracts_[j]->table_form_for(out);
      if (forms_[j].one_ulp) continue;
      shares_trig_[j] = last && contracts_[*last]->same_trig(*contracts_[j]);
      last = j;
    }
    forms_out_ = out;
  }
  // Every row's angle errors (at_position's), one call per contract for the block's rows
  // (impl::rope_contract::angle_errors_rows: ggml replays its recurrence across the rows), laid out
  // value by value for the contracts that evaluate a trig part. dtheta_ holds the block's rows
  // meanwhile and is left at the last row, as at_position(positions[R − 1]) leaves it.
  row_dtheta_.resize(bounds_.size());
  for (std::size_t j = 0; j < bounds_.size(); ++j) {
    if (!contracts_[j]) continue;
    std::vector<double>& dt = dtheta_[j];
    if (forms_[j].one_ulp || shares_trig_[j]) {
      contracts_[j]->angle_errors(positions[R - 1], dt);
      continue;
    }
    const std::size_t P = contracts_[j]->pairs();
    for (std::size_t k = 0; k < n; ++k) {
      if (pair_of[k] < 0 || static_cast<std::size_t>(pair_of[k]) >= P) {
        throw error("compare::rope_bounds::table_rows: value " + std::to_string(k) + " of pair " +
                    std::to_string(pair_of[k]) + ", outside the " + std::to_string(P) + " pairs");
      }
    }
    // Values in pair order are laid out as the rows' angle errors: computed in place, without a
    // gather.
    if (pairs_in_order(pair_of, P)) {
      row_dtheta_[j].resize(R * P);
      contracts_[j]->angle_errors_rows(positions, row_dtheta_[j]);
      dt.assign(row_dtheta_[j].end() - static_cast<std::ptrdiff_t>(P), row_dtheta_[j].end());
      continue;
    }
    dt.resize(R * P);
    contracts_[j]->angle_errors_rows(positions, dt);
    row_dtheta_[j].resize(R * n);
    for (std::size_t q = 0; q < R; ++q) {
      const double* row = dt.data() + q * P;
      double* d = row_dtheta_[j].data() + q * n;
      for (std::size_t k = 0; k < n; ++k) d[k] = row[static_cast<std::size_t>(pair_of[k])];
    }
    std::copy(dt.begin() + static_cast<std::ptrdiff_t>((R - 1) * P), dt.end(), dt.begin());
    dt.resize(P);
  }
  // Further planes (e.g. sin after cos) are at the same rows: the trig loop reads the same angle
  // errors for each. The trig part goes straight to its contract's bounds where nothing follows
  // it (path_loop's copy), and the contracts sharing it read it there.
  const double* trig = nullptr;
  for (std::size_t j = 0; j < bounds_.size(); ++j) {
    double* bj = b.data() + j * N;
    switch (bounds_[j].k) {
      case named_bound::kind::drift_free:
        std::fill(bj, bj + N, 2 * metric::ulp_at(m_, out));
        break;
      case named_bound::kind::one_ulp:
        ulp_loop(out, abs_y.data(), bj, N);
        break;
      case named_bound::kind::contract: {
        const impl::table_form& f = forms_[j];
        if (f.one_ulp) {
          ulp_loop(out, abs_y.data(), bj, N);
          break;
        }
        const bool identity = !f.stored && !f.rounded_out;
        if (!shares_trig_[j]) {
          double* to = identity ? bj : row_trig_.data();
          for (std::size_t s = 0; s < N; s += R * n) {
            trig_loop(f, row_dtheta_[j].data(), abs_y.data() + s, to + s, R * n);
          }
          trig = to;
          if (identity) break;
        }
        path_loop(f, trig, abs_y.data(), bj, N);
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
