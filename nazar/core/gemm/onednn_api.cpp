// The loader behind onednn_api.h.
#include "nazar/core/gemm/onednn_api.h"

#if NAZAR_BLAS_ONEDNN
#include "nazar/core/check.h"
#include "nazar/core/cpu_features.h"

#include <dlfcn.h>

#ifndef NAZAR_DNNL_SONAME
#define NAZAR_DNNL_SONAME "libdnnl.so.2"
#endif

namespace nazar::gemm_detail {

namespace {

#if NAZAR_ONEDNN_LINKED
// Address-sanitizer builds link oneDNN instead (cmake/blas.cmake): LeakSanitizer's thread tracer
// (LLVM 14) crashed at exit on the dynamic TLS of a library opened at run time.
OneDnn functions() {
    OneDnn api;
#define NAZAR_ONEDNN_TAKE(f) api.f = &::f;
    NAZAR_ONEDNN_FUNCTIONS(NAZAR_ONEDNN_TAKE)
#undef NAZAR_ONEDNN_TAKE
    return api;
}
#else
OneDnn functions() {
    // RTLD_LOCAL: its symbols stay out of the global scope (nothing else resolves against
    // them); RTLD_NOW: a missing symbol fails here, not in the middle of a product. The handle
    // is never closed: the library stays for the life of the process, as a linked one would.
    void* lib = dlopen(NAZAR_DNNL_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* why = dlerror();
        NZ_FAIL(
            "cannot load oneDNN ({}), which this build of nazar uses for its fp32 products: "
            "{}. Install Debian's libdnnl2 (scripts/install-deps.sh), or build with "
            "-DNAZAR_BLAS=OpenBLAS",
            NAZAR_DNNL_SONAME, why ? why : "unknown reason");
    }
    OneDnn api;
#define NAZAR_ONEDNN_LOAD(f)                                                             \
    api.f = reinterpret_cast<decltype(api.f)>(dlsym(lib, #f));                           \
    NZ_CHECK(api.f != nullptr, "oneDNN ({}) has no function {}: nazar needs oneDNN 2.x", \
             NAZAR_DNNL_SONAME, #f);
    NAZAR_ONEDNN_FUNCTIONS(NAZAR_ONEDNN_LOAD)
#undef NAZAR_ONEDNN_LOAD
    return api;
}
#endif

OneDnn open_onednn() {
    OneDnn api = functions();
    // NAZAR_ISA=avx2 caps oneDNN too; this must happen before its first kernel is made.
    if (switches().isa == "avx2") api.dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx2);
    return api;
}

}  // namespace

const OneDnn& onednn() {
    static const OneDnn api = open_onednn();  // a throw leaves it unset: the next call retries
    return api;
}

const char* onednn_soname() {
    return NAZAR_DNNL_SONAME;
}

}  // namespace nazar::gemm_detail
#endif  // NAZAR_BLAS_ONEDNN
