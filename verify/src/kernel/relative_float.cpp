// ALiBi kernels for float outputs (one instantiation per translation unit).

#include "relative_impl.h"

namespace pev::kernel {

template void alibi_slopes<float>(const spec::alibi&, strategy, std::span<float>);
template void alibi_bias<float>(const spec::alibi&, strategy, std::span<const std::int64_t>,
                                std::span<const std::int64_t>, std::span<float>);

}  // namespace pev::kernel
