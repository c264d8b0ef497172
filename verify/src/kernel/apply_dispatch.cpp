// rope_apply's run-time pieces that do not depend on the dtypes: argument validation
// (apply_impl.h).

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "apply_impl.h"
#include "pev/core/error.h"

namespace pev::kernel::detail {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

// a·b·c, or an error naming `what` on overflow (shapes come from users).
std::int64_t checked_volume(std::int64_t a, std::int64_t b, std::int64_t c, const char* what) {
  std::int64_t ab = 0;
  std::int64_t abc = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) {
    fail(std::string("rope_apply: ") + what + " shape overflows");
  }
  return abc;
}

}  // namespace

void fail(const std::string& message) { throw error(message); }

void check_spec(const spec::rope& s) {
  if (s.head_dim <= 0) fail("rope_apply: spec head_dim must be positive, got " + str(s.head_dim));
  if (s.rotary_dim < 2 || s.rotary_dim > s.head_dim || s.rotary_dim % 2 != 0) {
    fail("rope_apply: spec rotary_dim must be even and in [2, head_dim = " + str(s.head_dim) +
         "], got " + str(s.rotary_dim));
  }
}

void check_table(const spec::rope& s, std::int64_t table_rows, std::int64_t table_pairs,
                 std::size_t cos_size, std::size_t sin_size, std::span<const std::int64_t> rows) {
  if (table_pairs != s.pairs()) {
    fail("rope_apply: table has " + str(table_pairs) +
         " pairs per row, the spec needs rotary_dim/2 = " + str(s.pairs()));
  }
  if (table_rows < 0) fail("rope_apply: table rows must be ≥ 0, got " + str(table_rows));
  const std::int64_t size = checked_volume(table_rows, table_pairs, 1, "table");
  if (static_cast<std::int64_t>(cos_size) != size || static_cast<std::int64_t>(sin_size) != size) {
    fail("rope_apply: table cos and sin must hold rows·pairs = " + str(size) +
         " values each, got " + std::to_string(cos_size) + " and " + std::to_string(sin_size));
  }
  for (std::size_t t = 0; t < rows.size(); ++t) {
    if (rows[t] < 0 || rows[t] >= table_rows) {
      fail("rope_apply: token " + std::to_string(t) + " uses table row " + str(rows[t]) +
           ", outside the table's rows [0, " + str(table_rows) + ")");
    }
  }
}

void check_heads(const spec::rope& s, std::int64_t tokens, std::int64_t heads,
                 std::int64_t head_dim, std::size_t size, std::int64_t expected_tokens,
                 const char* name) {
  const std::string n = std::string("rope_apply: ") + name;
  if (head_dim != s.head_dim) {
    fail(n + " has head_dim " + str(head_dim) + ", the spec's head_dim is " + str(s.head_dim));
  }
  if (tokens != expected_tokens) {
    fail(n + " has " + str(tokens) + " tokens, rows has " + str(expected_tokens));
  }
  if (heads < 0) fail(n + " heads must be ≥ 0, got " + str(heads));
  const std::int64_t volume = checked_volume(tokens, heads, head_dim, name);
  if (static_cast<std::int64_t>(size) != volume) {
    fail(n + " data must hold tokens·heads·head_dim = " + str(volume) + " values, got " +
         std::to_string(size));
  }
}

bool overlaps(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes) {
  if (a_bytes == 0 || b_bytes == 0) return false;
  const auto a0 = reinterpret_cast<std::uintptr_t>(a);
  const auto b0 = reinterpret_cast<std::uintptr_t>(b);
  return a0 < b0 + b_bytes && b0 < a0 + a_bytes;
}

}  // namespace pev::kernel::detail
