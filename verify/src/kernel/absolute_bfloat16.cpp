// Sinusoidal and learned kernels for bfloat16 outputs (one instantiation per translation unit).

#include "absolute_impl.h"

namespace pev::kernel {

template void sinusoidal_table<bfloat16>(const spec::sinusoidal&, strategy,
                                         std::span<const std::int64_t>, std::span<bfloat16>);
template void learned_table<bfloat16>(const spec::learned&, strategy, std::span<const std::int64_t>,
                                      std::span<bfloat16>);

}  // namespace pev::kernel
