// What the CPU and the OS let nazar run, detected once, and the environment switches that
// select or compare kernels, read once. Every kernel choice in nazar asks here; nothing else
// calls cpuid or reads a NAZAR_* switch (docs/performance.md, "Kernel choice").
//
// A feature counts as usable only when the CPU reports it (cpuid) AND the OS saves the register
// state it needs (XCR0: YMM for AVX/AVX2/FMA; opmask + ZMM for AVX-512; tile config + data for
// AMX) AND, for AMX, Linux granted this process the tile data state (arch_prctl
// ARCH_REQ_XCOMP_PERM, requested during detection only where cpuid and XCR0 both report AMX).
// Detection runs on the first call, never in a static initialiser.
#pragma once

#include <string>
#include <vector>

namespace nazar {

struct CpuFeatures {
    std::string vendor;                       // "GenuineIntel", "AuthenticAMD", ...
    std::string brand;                        // the processor brand string
    int family = 0, model = 0, stepping = 0;  // cpuid leaf 1, extended fields folded in

    // Usable (cpuid + OS state), as described above.
    bool avx2 = false, fma = false, f16c = false;
    bool avx512f = false, avx512dq = false, avx512bw = false, avx512vl = false;
    bool avx512_bf16 = false, avx512_vnni = false, avx_vnni = false;
    bool amx_tile = false, amx_bf16 = false, amx_int8 = false;

    // What cpuid alone reports for AMX, and why it is not usable when it is not.
    bool amx_cpuid = false;
    std::string amx_note;  // "", "no AMX", "XCR0: tile state not enabled by the OS", ...

    // x86-64-v3 as nazar needs it: AVX2 + FMA + F16C usable (the build's baseline).
    bool x86_64_v3() const { return avx2 && fma && f16c; }
    // The AVX-512 subset nazar's 16-lane kernels use (F + DQ; BW/VL for the full SkylakeX set).
    bool avx512_kernels() const { return avx512f && avx512dq; }
    // Usable feature names, e.g. {"avx2", "fma", "avx512f", ...}.
    std::vector<std::string> names() const;
    // One line: "GenuineIntel family 6 model 207 (Intel(R) Xeon(R) ...): avx2 fma ...".
    std::string summary() const;
};

// Detected on the first call (thread-safe), the same object after.
const CpuFeatures& cpu_features();

// The environment switches, read once on the first call (thread-safe). Each exists to compare
// paths or to diagnose; none is needed for speed (docs/performance.md).
struct Switches {
    bool gemm_threads_blas = false;  // NAZAR_GEMM_THREADS=blas: OpenBLAS's own threads
    bool small_gemm_avx2 = false;    // NAZAR_SMALL_GEMM=avx2: small-M kernel on 8 lanes only
    bool nn512_off = false;          // NAZAR_NN512=0: no NN AVX-512 kernel (OpenBLAS instead)
    bool gemm_profile = false;       // NAZAR_GEMM_PROFILE=1: per-shape GEMM timing at exit
    bool attn_avx512_off = false;    // NAZAR_ATTN_AVX512=0: additive kernels on 8 lanes only
    bool amx_off = false;            // NAZAR_AMX=0: int8 products on AVX512-VNNI, not AMX tiles
    std::string isa;                 // NAZAR_ISA=avx2|avx512: cap the kernels' ISA ("" = CPU's)
    std::vector<std::string> set;    // "NAME=value" of every switch found set, for reports
};
const Switches& switches();

// Whether 16-lane AVX-512 kernels may run: the CPU has them and NAZAR_ISA does not cap at avx2.
bool avx512_allowed();

}  // namespace nazar
