// flash2's d = 64 instances, a translation unit of their own so that the build compiles them in
// parallel.
#include "flash_instances.hpp"
#include "flash_ops.cuh"

namespace iosim_cuda {

IOSIM_FLASH_DISPATCH(flash2_d64_op, flash2_op, IOSIM_FLASH2_D64_INSTANCES)

}  // namespace iosim_cuda
