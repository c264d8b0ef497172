#pragma once
// The comparison of RoPE values with the exact reference (docs/design.md §4.1): tables (m·cos,
// m·sin of every pair at every position) and rotated q/k vectors, value by value, into
// compare::figures, with bounds from compare::rope_bounds. The report's sweeps, certification and
// the accuracy-contract table all compare through these loops; they differ only in where the
// implementation's values come from (a kernel's output, a dump's tensor in some layout), which the
// caller's `got` accessor hides.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "pev/compare/bounds.h"
#include "pev/compare/figures.h"
#include "pev/compare/row_inputs.h"
#include "pev/metric/error_model.h"
#include "pev/metric/ulp.h"
#include "pev/scalar/dtype.h"

namespace pev::compare {

/// Reference values of a batch of table rows: RN_T and the exact values (doubles) of cos and sin,
/// [rows, pairs] row-major.
template <class T>
struct table_rows {
  std::span<const T> rn_cos, rn_sin;
  std::span<const double> cos, sin;
  std::int64_t pairs = 0;
};

/// Compares table rows: row q of the implementation's values is at position positions[q] and its
/// reference values are row ref_row(q) of `ref`; column j holds pair column_pair[j], and
/// got(q, j, is_sin) returns the implementation's value (type T); a `got` with a member
/// row_bytes(q, is_sin) may return where row q's encodings lie contiguous in memory (columns in
/// order, any alignment; nullptr: value by value), read in place. Values are indexed by column in
/// the figures. cos and sin may be the same figures (one check for both; positions are then
/// counted once).
///
/// MRoPE (docs/encodings.md §4.6): with a non-empty stream_of_pair, `positions` is [S, rows]
/// (S = streams) and pair i of row q is at positions[stream_of_pair[i]·rows + q]: its value, bound
/// and figures use that position; each row counts its distinct stream positions.
template <class T, class RefRow, class Got>
void compare_table(std::span<const std::int64_t> positions,
                   std::span<const std::int64_t> stream_of_pair, std::int64_t streams,
                   RefRow&& ref_row, const table_rows<T>& ref,
                   std::span<const std::int64_t> column_pair, Got&& got, rope_bounds& bounds,
                   figures& cos, figures& sin) {
  constexpr format out = format_of<T>();
  std::vector<double> b(bounds.size());
  const auto P = static_cast<std::size_t>(ref.pairs);
  const double scale = std::fabs(bounds.m()), scale_ulp = metric::ulp_at(scale, out);
  const bool multi = !stream_of_pair.empty();
  if (!multi && &cos != &sin) {
    // Blocks of rows at a time (figures::add_rows: the same figures as value by value, cos and
    // sin each in row-major order; the shared mismatch list takes each row's cos values before
    // its sin values, merged from the two checks' lists by row).
    constexpr std::size_t kBlock = 64;
    const std::size_t n = column_pair.size(), nb = bounds.size();
    const std::size_t cap = kBlock * n;
    std::vector<double> got_v(2 * cap), exact_v(2 * cap), abs_v(2 * cap), bound_v(2 * cap * nb);
    std::vector<std::uint64_t> dist_v(2 * cap);
    std::vector<T> got_t(n);
    std::vector<report::mismatch> found[2];
    std::vector<std::size_t> found_rows[2];
    // Columns 0 … P − 1 in pair order (the common layouts) read the reference rows contiguously.
    const bool in_order = pairs_in_order(column_pair, P);
    for (std::size_t q0 = 0; q0 < positions.size(); q0 += kBlock) {
      const std::size_t R = std::min(kBlock, positions.size() - q0), N = R * n;
      const std::span<const std::int64_t> rows_pos = positions.subspan(q0, R);
      for (std::size_t q = 0; q < R; ++q) {
        cos.add_position(rows_pos[q]);
        sin.add_position(rows_pos[q]);
        const std::size_t k = ref_row(q0 + q);
        for (int w = 0; w < 2; ++w) {
          // A `got` whose rows lie contiguous in memory (got.row_bytes) is read in place, without
          // a call or a copy per value.
          const std::byte* row = nullptr;
          if constexpr (requires { got.row_bytes(q0, true); }) row = got.row_bytes(q0 + q, w == 1);
          if (row == nullptr) {
            for (std::size_t j = 0; j < n; ++j) got_t[j] = got(q0 + q, j, w == 1);
            row = reinterpret_cast<const std::byte*>(got_t.data());
          }
          const std::size_t at = static_cast<std::size_t>(w) * N + q * n;
          row_inputs<T>(row, n, (w == 0 ? ref.rn_cos : ref.rn_sin).data(),
                        (w == 0 ? ref.cos : ref.sin).data(),
                        in_order ? std::span<const std::int64_t>() : column_pair, k * P,
                        got_v.data() + at, exact_v.data() + at, abs_v.data() + at,
                        dist_v.data() + at);
        }
      }
      // Bounds of both planes in one pass (the rows' angle errors once): [bound][cos | sin].
      const std::span<double> both(bound_v.data(), 2 * N * nb);
      bounds.table_rows(rows_pos, column_pair, std::span<const double>(abs_v.data(), 2 * N), out,
                        both);
      for (int w = 0; w < 2; ++w) {
        figures& f = w == 0 ? cos : sin;
        found[w].clear();
        found_rows[w].clear();
        std::vector<report::mismatch>* sink = f.mismatch_sink(&found[w]);
        const std::size_t off = static_cast<std::size_t>(w) * N;
        f.add_rows({rows_pos, 0, std::span<const double>(got_v.data() + off, N),
                    std::span<const double>(exact_v.data() + off, N),
                    std::span<const std::uint64_t>(dist_v.data() + off, N), out, scale, scale_ulp},
                   w == 0 ? "cos" : "sin",
                   std::span<double>(bound_v.data() + off, 2 * N * nb - off), &found_rows[w],
                   2 * N);
        f.mismatch_sink(sink);
      }
      // The checks' sinks in comparison order: row by row, cos first (one sink shared by cos
      // and sin, as certification's; or each its own).
      std::vector<report::mismatch>* sinks[2] = {cos.mismatch_sink(nullptr),
                                                 sin.mismatch_sink(nullptr)};
      cos.mismatch_sink(sinks[0]);
      sin.mismatch_sink(sinks[1]);
      std::size_t a = 0, c = 0;
      while (a < found[0].size() || c < found[1].size()) {
        const bool take_cos =
            c == found[1].size() || (a < found[0].size() && found_rows[0][a] <= found_rows[1][c]);
        const int w = take_cos ? 0 : 1;
        const report::mismatch& m = take_cos ? found[0][a++] : found[1][c++];
        if (sinks[w] && sinks[w]->size() < (w == 0 ? cos : sin).max_mismatches()) {
          sinks[w]->push_back(m);
        }
      }
    }
    return;
  }
  const auto S = static_cast<std::size_t>(multi ? streams : 1);
  const std::size_t rows = positions.size() / S;
  std::vector<std::int64_t> row_pos(S);
  for (std::size_t q = 0; q < rows; ++q) {
    for (std::size_t k = 0; k < S; ++k) row_pos[k] = positions[k * rows + q];
    for (std::size_t k = 0; k < S; ++k) {
      if (std::find(row_pos.begin(), row_pos.begin() + static_cast<std::ptrdiff_t>(k),
                    row_pos[k]) != row_pos.begin() + static_cast<std::ptrdiff_t>(k)) {
        continue;  // counted once per row
      }
      cos.add_position(row_pos[k]);
      if (&sin != &cos) sin.add_position(row_pos[k]);
    }
    if (multi) {
      bounds.at_positions(row_pos, stream_of_pair);
    } else {
      bounds.at_position(row_pos[0]);
    }
    const std::size_t k = ref_row(q);
    for (std::size_t j = 0; j < column_pair.size(); ++j) {
      const auto i = static_cast<std::size_t>(column_pair[j]);
      const std::int64_t p =
          multi ? row_pos[static_cast<std::size_t>(stream_of_pair[i])] : row_pos[0];
      const std::size_t e = k * P + i;
      for (int which = 0; which < 2; ++which) {
        const T g = got(q, j, which == 1);
        const double y = which == 0 ? ref.cos[e] : ref.sin[e];
        const T rn = which == 0 ? ref.rn_cos[e] : ref.rn_sin[e];
        const double ay = std::fabs(y);
        bounds.table(static_cast<std::int64_t>(i), ay, out, b);
        (which == 0 ? cos : sin)
            .add(value_of<T>(p, static_cast<std::int64_t>(j), g, rn, y, scale, scale_ulp),
                 which == 0 ? "cos" : "sin", b);
      }
    }
  }
}

/// compare_table for one position per row (plain RoPE).
template <class T, class RefRow, class Got>
void compare_table(std::span<const std::int64_t> positions, RefRow&& ref_row,
                   const table_rows<T>& ref, std::span<const std::int64_t> column_pair, Got&& got,
                   rope_bounds& bounds, figures& cos, figures& sin) {
  compare_table<T>(positions, {}, 1, std::forward<RefRow>(ref_row), ref, column_pair,
                   std::forward<Got>(got), bounds, cos, sin);
}

/// Compares one rotated head: x (head_dim inputs, exact doubles), the implementation's outputs
/// `got` (type T) and the reference's (rn, exact), at position p; element j of the head is value
/// index `index0 + j` in the figures. MRoPE (docs/encodings.md §4.6): a non-empty dim_position
/// gives element j's position (its pair's stream position; bounds evaluated by
/// rope_bounds::at_positions).
template <class T>
void compare_rotation(std::int64_t p, std::int64_t index0, std::span<const double> x,
                      std::span<const T> got, std::span<const T> rn, std::span<const double> exact,
                      std::span<const std::int64_t> dim_pair, const spec::rope& s,
                      rope_bounds& bounds, figures& f, const char* component,
                      std::span<const std::int64_t> dim_position = {}) {
  constexpr format out = format_of<T>();
  std::vector<double> b(bounds.size());
  for (std::size_t j = 0; j < got.size(); ++j) {
    const std::int64_t i = dim_pair[j];
    double x0 = 0, x1 = 0;
    if (i >= 0) {
      const auto [a, c] = spec::pair_dims(s, i);
      x0 = x[static_cast<std::size_t>(a)];
      x1 = x[static_cast<std::size_t>(c)];
    }
    bounds.rotation(i, x0, x1, exact[j], out, b);
    const double scale = std::fabs(bounds.m()) * (std::fabs(x0) + std::fabs(x1));
    f.add(value_of<T>(dim_position.empty() ? p : dim_position[j],
                      index0 + static_cast<std::int64_t>(j), got[j], rn[j], exact[j], scale,
                      scale > 0 ? metric::ulp_at(scale, out) : 0),
          component, b);
  }
}

}  // namespace pev::compare
