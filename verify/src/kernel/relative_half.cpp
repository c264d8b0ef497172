// ALiBi kernels for half outputs (one instantiation per translation unit).

#include "relative_impl.h"

namespace pev::kernel {

template void alibi_slopes<half>(const spec::alibi&, strategy, std::span<half>);
template void alibi_bias<half>(const spec::alibi&, strategy, std::span<const std::int64_t>,
                               std::span<const std::int64_t>, std::span<half>);

}  // namespace pev::kernel
