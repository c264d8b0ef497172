// rope_kernel::table for bfloat16 outputs: one instantiation per translation unit
// (docs/design.md §11.2).

#include "rope_impl.h"

namespace pev::kernel {

template void rope_kernel::table<bfloat16>(std::span<const std::int64_t>, std::span<bfloat16>,
                                           std::span<bfloat16>) const;

}  // namespace pev::kernel
