// ALiBi kernels for bfloat16 outputs (one instantiation per translation unit).

#include "relative_impl.h"

namespace pev::kernel {

template void alibi_slopes<bfloat16>(const spec::alibi&, strategy, std::span<bfloat16>);
template void alibi_bias<bfloat16>(const spec::alibi&, strategy, std::span<const std::int64_t>,
                                   std::span<const std::int64_t>, std::span<bfloat16>);

}  // namespace pev::kernel
