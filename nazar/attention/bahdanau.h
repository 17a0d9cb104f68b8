// Moved: the additive score kernels are declared in additive_kernels.h. This header remains so
// that existing includes keep compiling; new code includes additive_kernels.h.
#pragma once

#include "nazar/attention/additive_kernels.h"
