// The positions of a dump's rows, the rows a shard compares and their digests, and the names and
// shapes messages show.

#include <fmt/format.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_reduce.h>
#include <tbb/task_arena.h>

#include <algorithm>

#include "detail.h"
#include "pev/core/error.h"

namespace pev::certify::detail {

std::vector<std::int64_t> squeezed(const std::vector<std::int64_t>& shape) {
  std::size_t k = 0;
  while (k + 1 < shape.size() && shape[k] == 1) ++k;
  return {shape.begin() + static_cast<std::ptrdiff_t>(k), shape.end()};
}

std::string tensor_list(const dump& d) {
  std::string s;
  for (const auto& [name, a] : d.tensors) {
    s += (s.empty() ? "" : ", ") + fmt::format("'{}' {}", name, io::shape_string(a.shape));
  }
  return s.empty() ? "no tensors" : s;
}

const io::array* find_any(const dump& d, std::initializer_list<const char*> names,
                          std::string* found) {
  for (const char* n : names) {
    if (const io::array* a = d.find(n)) {
      *found = n;
      return a;
    }
  }
  return nullptr;
}

bool covers_every_position(const std::vector<std::int64_t>& pos, bool required) {
  std::vector<std::int64_t> sorted(pos);
  if (!std::is_sorted(sorted.begin(), sorted.end())) std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (std::size_t k = 0; k < sorted.size(); ++k) {
    if (sorted[k] != static_cast<std::int64_t>(k)) {
      if (!required) return false;
      throw error(
          fmt::format("--exhaustive: the rows do not cover every position 0 … {}: {} is "
                      "missing",
                      sorted.back(), static_cast<std::int64_t>(k)));
    }
  }
  return true;
}

std::vector<std::int64_t> row_positions(const dump& d, const options& o, std::int64_t rows,
                                        std::initializer_list<const char*> names,
                                        std::int64_t batch) {
  std::vector<std::int64_t> pos = o.positions;
  const std::int64_t per = batch > 0 ? rows / batch : rows;
  std::string source = "--positions";
  if (pos.empty()) {
    std::string name;
    if (const io::array* a = find_any(d, names, &name)) {
      pos = a->to_int64();
      source = fmt::format("'{}' {}", name, io::shape_string(a->shape));
      const auto sh = squeezed(a->shape);
      if (sh.size() == 2 && sh[0] != batch) {
        throw error(fmt::format(
            "tensor {} holds the positions of {} sequences, the table {} (a batch of {})", source,
            sh[0], batch, batch));
      }
    } else {
      for (std::int64_t b = 0; b < batch; ++b) {
        for (std::int64_t r = 0; r < per; ++r) pos.push_back(r);
      }
    }
  }
  if (batch > 1 && static_cast<std::int64_t>(pos.size()) == per) {
    // Positions [P] shared by every sequence of the batch.
    std::vector<std::int64_t> all;
    for (std::int64_t b = 0; b < batch; ++b) all.insert(all.end(), pos.begin(), pos.end());
    pos = std::move(all);
  }
  if (static_cast<std::int64_t>(pos.size()) != rows) {
    throw error(fmt::format("the table has {} rows{} but {} positions are given ({})", rows,
                            batch > 1 ? fmt::format(" ({} × {})", batch, per) : "", pos.size(),
                            source));
  }
  if (!pos.empty() && *std::min_element(pos.begin(), pos.end()) < 0) {
    throw error("negative positions cannot be certified");
  }
  covers_every_position(pos, o.exhaustive);
  return pos;
}

std::vector<std::int64_t> stream_row_positions(const dump& d, const options& o, std::int64_t rows,
                                               std::int64_t streams,
                                               std::initializer_list<const char*> names) {
  std::vector<std::int64_t> pos = o.positions;
  std::string name = "--positions";
  if (pos.empty()) {
    if (const io::array* a = find_any(d, names, &name)) {
      pos = a->to_int64();
      name = "tensor '" + name + "'";
    } else {
      for (std::int64_t r = 0; r < rows; ++r) pos.push_back(r);
    }
  }
  const auto n = static_cast<std::int64_t>(pos.size());
  if (n == rows) {  // text tokens: t = h = w
    std::vector<std::int64_t> all;
    for (std::int64_t k = 0; k < streams; ++k) all.insert(all.end(), pos.begin(), pos.end());
    pos = std::move(all);
  } else if (n != streams * rows) {
    throw error(fmt::format(
        "{} holds {} positions, but MRoPE rows need [{}, {}] = {} (one row per position stream) or "
        "{} (text tokens)",
        name, n, streams, rows, streams * rows, rows));
  }
  if (!pos.empty() && *std::min_element(pos.begin(), pos.end()) < 0) {
    throw error("negative positions cannot be certified");
  }
  covers_every_position(pos, o.exhaustive);
  return pos;
}

std::vector<std::int64_t> index_positions(const dump& d, const char* name, std::int64_t n) {
  std::vector<std::int64_t> v;
  if (const io::array* a = d.find(name)) {
    v = a->to_int64();
    if (static_cast<std::int64_t>(v.size()) != n) {
      throw error(
          fmt::format("tensor '{}' holds {} positions, the bias has {}", name, v.size(), n));
    }
  } else {
    for (std::int64_t i = 0; i < n; ++i) v.push_back(i);
  }
  return v;
}

int arena_threads(const options& o) {
  const int cores = tbb::this_task_arena::max_concurrency();
  return o.threads > 0 ? std::min(o.threads, cores) : cores;
}

std::pair<std::size_t, std::size_t> shard_rows(std::size_t rows, const options& o) {
  if (o.shard_count <= 1) return {0, rows};
  // ⌊I·R/N⌋ = I·⌊R/N⌋ + ⌊I·(R mod N)/N⌋, without overflow (I·(R mod N) < N² < 2^62).
  const auto n = static_cast<std::size_t>(o.shard_count);
  const auto at = [&](int i) {
    const auto k = static_cast<std::size_t>(i);
    return k * (rows / n) + k * (rows % n) / n;
  };
  return {at(o.shard_index), at(o.shard_index + 1)};
}

std::uint64_t rows_digest(std::size_t first, std::size_t end, std::size_t width, int threads,
                          const row_bits& bits) {
  std::vector<std::uint64_t> columns(width);
  for (std::size_t c = 0; c < width; ++c) columns[c] = digest_key(c ^ (std::uint64_t{1} << 63));
  tbb::task_arena arena(threads);
  return arena.execute([&] {
    return tbb::parallel_reduce(
        tbb::blocked_range<std::size_t>(first, end, 256), std::uint64_t{0},
        [&](const tbb::blocked_range<std::size_t>& r, std::uint64_t acc) {
          std::vector<std::uint64_t> row(width);
          for (std::size_t q = r.begin(); q < r.end(); ++q) {
            bits(q, row);
            const std::uint64_t rk = digest_key(q);
            for (std::size_t c = 0; c < width; ++c) acc += value_digest(rk, columns[c], row[c]);
          }
          return acc;
        },
        [](std::uint64_t a, std::uint64_t b) { return a + b; });
  });
}

void record_rows(check& c, std::size_t first, std::size_t end, std::size_t total, std::size_t width,
                 int threads, const row_bits& bits) {
  if (!c.state) return;
  const auto hex = [](std::uint64_t v) { return fmt::format("{:016x}", v); };
  c.state->rows = report::figure_state::rows_of{static_cast<std::int64_t>(first),
                                                static_cast<std::int64_t>(end),
                                                static_cast<std::int64_t>(total),
                                                static_cast<std::int64_t>(width),
                                                hex(rows_digest(first, end, width, threads, bits)),
                                                hex(rows_digest(0, total, width, threads, bits))};
}

void record_positions(report::certification& c, const std::vector<std::int64_t>& pos) {
  c.exhaustive = covers_every_position(pos, false);
  c.positions = pos.size();
  if (pos.empty()) return;
  c.min_position = *std::min_element(pos.begin(), pos.end());
  c.max_position = *std::max_element(pos.begin(), pos.end());
}

}  // namespace pev::certify::detail
