// flash2's d = 128 instances, a translation unit of their own so that the build compiles them in
// parallel.
#include "flash_instances.hpp"
#include "flash_ops.cuh"

namespace iosim_cuda {

IOSIM_FLASH_DISPATCH(flash2_d128_op, flash2_op, IOSIM_FLASH2_D128_INSTANCES)

}  // namespace iosim_cuda
