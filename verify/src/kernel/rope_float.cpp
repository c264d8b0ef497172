// rope_kernel::table for float outputs: one instantiation per translation unit
// (docs/design.md §11.2).

#include "rope_impl.h"

namespace pev::kernel {

template void rope_kernel::table<float>(std::span<const std::int64_t>, std::span<float>,
                                        std::span<float>) const;

}  // namespace pev::kernel
