// flash1's instances, a translation unit of their own so that the build compiles them in
// parallel.
#include "flash_instances.hpp"
#include "flash_ops.cuh"

namespace iosim_cuda {

IOSIM_FLASH_DISPATCH(flash1_any_op, flash1_op, IOSIM_FLASH1_INSTANCES)

}  // namespace iosim_cuda
