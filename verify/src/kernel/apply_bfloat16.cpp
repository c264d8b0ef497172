// rope_apply / rope_apply_qk for bfloat16 q/k and every table dtype (one translation unit per q/k
// dtype).

#include "apply_impl.h"

namespace pev::kernel {

PEV_KERNEL_APPLY_INSTANTIATE(bfloat16)

}  // namespace pev::kernel
