// rope_kernel::table for half outputs: one instantiation per translation unit
// (docs/design.md §11.2).

#include "rope_impl.h"

namespace pev::kernel {

template void rope_kernel::table<half>(std::span<const std::int64_t>, std::span<half>,
                                       std::span<half>) const;

}  // namespace pev::kernel
