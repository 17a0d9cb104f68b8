// oneDNN's C API, opened on first use. nazar does not link libdnnl: the dynamic loader would
// relocate and map it at every start (about 5 MB resident), although an int8 or bf16 model
// decoding on nazar's own packed kernels never calls it. The first product that needs it
// (dnnl_sgemm behind the large fp32 products, the bf16 matmul) opens the library once.
#pragma once

#if NAZAR_BLAS_ONEDNN
#include <oneapi/dnnl/dnnl.h>

namespace nazar::gemm_detail {

// Every oneDNN function nazar calls.
#define NAZAR_ONEDNN_FUNCTIONS(X)            \
    X(dnnl_sgemm)                            \
    X(dnnl_set_max_cpu_isa)                  \
    X(dnnl_get_effective_cpu_isa)            \
    X(dnnl_version)                          \
    X(dnnl_engine_create)                    \
    X(dnnl_stream_create)                    \
    X(dnnl_stream_wait)                      \
    X(dnnl_stream_destroy)                   \
    X(dnnl_memory_desc_init_by_strides)      \
    X(dnnl_memory_create)                    \
    X(dnnl_memory_destroy)                   \
    X(dnnl_matmul_desc_init)                 \
    X(dnnl_primitive_attr_create)            \
    X(dnnl_primitive_attr_destroy)           \
    X(dnnl_primitive_attr_set_output_scales) \
    X(dnnl_primitive_attr_set_post_ops)      \
    X(dnnl_post_ops_create)                  \
    X(dnnl_post_ops_append_sum)              \
    X(dnnl_post_ops_destroy)                 \
    X(dnnl_primitive_desc_create)            \
    X(dnnl_primitive_desc_destroy)           \
    X(dnnl_primitive_create)                 \
    X(dnnl_primitive_execute)

struct OneDnn {
#define NAZAR_ONEDNN_POINTER(f) decltype(&::f) f = nullptr;
    NAZAR_ONEDNN_FUNCTIONS(NAZAR_ONEDNN_POINTER)
#undef NAZAR_ONEDNN_POINTER
};

// The library's functions. The first call opens it (its SONAME, NAZAR_DNNL_SONAME, found the
// way the dynamic loader finds any library) and applies NAZAR_ISA=avx2 before any kernel
// exists; thread-safe. Throws nazar::Error naming the library and the loader's reason when it
// cannot be opened or lacks a function (a later call tries again).
const OneDnn& onednn();

// The SONAME that onednn() opens (for messages and tests).
const char* onednn_soname();

}  // namespace nazar::gemm_detail
#endif  // NAZAR_BLAS_ONEDNN
