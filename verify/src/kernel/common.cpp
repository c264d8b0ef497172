#include "common.h"

#include <fmt/format.h>

#include "pev/core/error.h"

namespace pev::kernel::detail {

void reject_ggml(strategy st, const char* family) {
  if (st == strategy::ggml) throw error(fmt::format("strategy ggml has no {} kernel", family));
}

}  // namespace pev::kernel::detail
