// rope_apply / rope_apply_qk for half q/k and every table dtype (one translation unit per q/k
// dtype).

#include "apply_impl.h"

namespace pev::kernel {

PEV_KERNEL_APPLY_INSTANTIATE(half)

}  // namespace pev::kernel
