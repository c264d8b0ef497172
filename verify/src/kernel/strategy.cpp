#include "pev/kernel/strategy.h"

#include <fmt/format.h>

#include <array>
#include <string>

#include "pev/core/error.h"

namespace pev::kernel {
namespace {

constexpr std::array<strategy, 5> kAll = {strategy::hf, strategy::ggml, strategy::table_fp16,
                                          strategy::table_bf16, strategy::accurate};

}  // namespace

const char* to_string(strategy s) {
  switch (s) {
    case strategy::hf:
      return "hf";
    case strategy::ggml:
      return "ggml";
    case strategy::table_fp16:
      return "table-fp16";
    case strategy::table_bf16:
      return "table-bf16";
    case strategy::accurate:
      return "accurate";
  }
  return "?";
}

strategy parse_strategy(std::string_view name) {
  std::string names;
  for (strategy s : kAll) {
    if (name == to_string(s)) return s;
    names += names.empty() ? "" : ", ";
    names += to_string(s);
  }
  throw error(fmt::format("--strategy: unknown strategy '{}' (known: {})", name, names));
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
