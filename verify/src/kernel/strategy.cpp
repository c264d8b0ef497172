#include "pev/kernel/strategy.h"

#include <fmt/format.h>

#include <array>
#include <string>

#include "pev/core/error.h"
#include "pev/core/names.h"

namespace pev::kernel {
namespace {

// The names of strategy (docs/design.md §11.11), in the order all_strategies() lists them.
constexpr name_table<strategy, 5> kNames({{{strategy::hf, "hf"},
                                           {strategy::ggml, "ggml"},
                                           {strategy::table_fp16, "table-fp16"},
                                           {strategy::table_bf16, "table-bf16"},
                                           {strategy::accurate, "accurate"}}});
constexpr std::array<strategy, 5> kAll = kNames.values();

}  // namespace

const char* to_string(strategy s) { return kNames.name(s); }

strategy parse_strategy(std::string_view name) {
  if (const auto s = kNames.find(name)) return *s;
  throw error(
      fmt::format("--strategy: unknown strategy {} (known: {})", quoted_text(name), kNames.list()));
}

std::span<const strategy> all_strategies() { return kAll; }

std::optional<dtype> storage_of(strategy s) {
  switch (s) {
    case strategy::table_fp16:
      return dtype::fp16;
    case strategy::table_bf16:
      return dtype::bf16;
    case strategy::hf:
    case strategy::ggml:
    case strategy::accurate:
      break;
  }
  return std::nullopt;
}

}  // namespace pev::kernel
