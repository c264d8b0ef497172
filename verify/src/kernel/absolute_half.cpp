// Sinusoidal and learned kernels for half outputs (one instantiation per translation unit).

#include "absolute_impl.h"

namespace pev::kernel {

template void sinusoidal_table<half>(const spec::sinusoidal&, strategy,
                                     std::span<const std::int64_t>, std::span<half>);
template void learned_table<half>(const spec::learned&, strategy, std::span<const std::int64_t>,
                                  std::span<half>);

}  // namespace pev::kernel
