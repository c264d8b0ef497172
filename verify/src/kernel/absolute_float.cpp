// Sinusoidal and learned kernels for float outputs (one instantiation per translation unit).

#include "absolute_impl.h"

namespace pev::kernel {

template void sinusoidal_table<float>(const spec::sinusoidal&, strategy,
                                      std::span<const std::int64_t>, std::span<float>);
template void learned_table<float>(const spec::learned&, strategy, std::span<const std::int64_t>,
                                   std::span<float>);

}  // namespace pev::kernel
