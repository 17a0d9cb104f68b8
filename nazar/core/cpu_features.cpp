#include "nazar/core/cpu_features.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define NZ_X86 1
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace nazar {

namespace {

#ifdef NZ_X86
struct Regs {
    unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub = 0) {
    Regs r;
    __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
    return r;
}

bool bit(unsigned v, int i) {
    return ((v >> i) & 1u) != 0;
}

uint64_t xcr0() {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (static_cast<uint64_t>(hi) << 32) | lo;
}

// Linux: ask for the AMX tile data state (XFEATURE 18); true when granted.
bool request_amx_permission() {
#if defined(__linux__) && defined(SYS_arch_prctl)
    constexpr int kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
    return false;
#endif
}

void identify(CpuFeatures& f, unsigned max_leaf) {
    const Regs v = cpuid(0);
    char vendor[13] = {};
    std::memcpy(vendor, &v.b, 4);
    std::memcpy(vendor + 4, &v.d, 4);
    std::memcpy(vendor + 8, &v.c, 4);
    f.vendor = vendor;
    if (max_leaf >= 1) {
        const unsigned a = cpuid(1).a;
        const int base_family = static_cast<int>((a >> 8) & 0xF);
        f.family =
            base_family == 0xF ? base_family + static_cast<int>((a >> 20) & 0xFF) : base_family;
        f.model = static_cast<int>((a >> 4) & 0xF);
        if (base_family == 0x6 || base_family == 0xF)
            f.model |= static_cast<int>((a >> 16) & 0xF) << 4;
        f.stepping = static_cast<int>(a & 0xF);
    }
    if (cpuid(0x80000000).a >= 0x80000004) {
        char brand[49] = {};
        for (unsigned i = 0; i < 3; ++i) {
            const Regs r = cpuid(0x80000002 + i);
            std::memcpy(brand + 16 * i, &r, 16);
        }
        std::string s = brand;
        const auto b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
        f.brand = b == std::string::npos ? "" : s.substr(b, e - b + 1);
    }
}

void detect_isa(CpuFeatures& f, unsigned max_leaf) {
    if (max_leaf < 1) return;
    const Regs l1 = cpuid(1);
    const bool osxsave = bit(l1.c, 27);
    const uint64_t x = osxsave ? xcr0() : 0;
    const bool os_ymm = (x & 0x6) == 0x6;              // SSE + AVX state
    const bool os_zmm = os_ymm && (x & 0xE0) == 0xE0;  // + opmask, ZMM_Hi256, Hi16_ZMM
    const bool os_tiles = (x & 0x60000) == 0x60000;    // XTILECFG + XTILEDATA
    const Regs l7 = max_leaf >= 7 ? cpuid(7, 0) : Regs{};
    const Regs l71 = max_leaf >= 7 && l7.a >= 1 ? cpuid(7, 1) : Regs{};
    const bool avx = bit(l1.c, 28) && os_ymm;
    f.fma = avx && bit(l1.c, 12);
    f.f16c = avx && bit(l1.c, 29);
    f.avx2 = avx && bit(l7.b, 5);
    f.avx_vnni = f.avx2 && bit(l71.a, 4);
    f.avx512f = os_zmm && bit(l7.b, 16);
    f.avx512dq = f.avx512f && bit(l7.b, 17);
    f.avx512bw = f.avx512f && bit(l7.b, 30);
    f.avx512vl = f.avx512f && bit(l7.b, 31);
    f.avx512_vnni = f.avx512f && bit(l7.c, 11);
    f.avx512_bf16 = f.avx512f && bit(l71.a, 5);
    f.amx_cpuid = bit(l7.d, 24);
    if (!f.amx_cpuid) {
        f.amx_note = "no AMX";
    } else if (!os_tiles) {
        f.amx_note = "AMX in cpuid, but the OS does not enable the tile state (XCR0)";
    } else if (!request_amx_permission()) {
        f.amx_note = "AMX in cpuid and XCR0, but Linux refused the tile data permission";
    } else {
        f.amx_tile = true;
        f.amx_bf16 = bit(l7.d, 22);
        f.amx_int8 = bit(l7.d, 25);
    }
}
#endif

CpuFeatures detect() {
    CpuFeatures f;
#ifdef NZ_X86
    const unsigned max_leaf = cpuid(0).a;
    identify(f, max_leaf);
    detect_isa(f, max_leaf);
#else
    f.vendor = "not x86";
    f.amx_note = "no AMX";
#endif
    return f;
}

bool is(const char* name, const char* value) {
    const char* e = std::getenv(name);
    return e != nullptr && std::strcmp(e, value) == 0;
}

Switches read_switches() {
    Switches s;
    s.gemm_threads_blas = is("NAZAR_GEMM_THREADS", "blas");
    s.small_gemm_avx2 = is("NAZAR_SMALL_GEMM", "avx2");
    s.nn512_off = is("NAZAR_NN512", "0");
    s.gemm_profile = is("NAZAR_GEMM_PROFILE", "1");
    s.attn_avx512_off = is("NAZAR_ATTN_AVX512", "0");
    s.amx_off = is("NAZAR_AMX", "0");
    if (const char* isa = std::getenv("NAZAR_ISA")) {
        s.isa = isa;
        if (s.isa != "avx2" && s.isa != "avx512") {
            std::fprintf(stderr, "nazar: ignoring NAZAR_ISA=%s (expected avx2 or avx512)\n", isa);
            s.isa.clear();
        }
    }
    for (const char* name :
         {"NAZAR_GEMM_THREADS", "NAZAR_SMALL_GEMM", "NAZAR_NN512", "NAZAR_GEMM_PROFILE",
          "NAZAR_ATTN_AVX512", "NAZAR_AMX", "NAZAR_ISA", "NAZAR_BLOCK_CACHE_MB"})
        if (const char* e = std::getenv(name)) s.set.push_back(fmt::format("{}={}", name, e));
    return s;
}

}  // namespace

std::vector<std::string> CpuFeatures::names() const {
    std::vector<std::string> n;
    const std::pair<bool, const char*> all[] = {{avx2, "avx2"},
                                                {fma, "fma"},
                                                {f16c, "f16c"},
                                                {avx512f, "avx512f"},
                                                {avx512dq, "avx512dq"},
                                                {avx512bw, "avx512bw"},
                                                {avx512vl, "avx512vl"},
                                                {avx512_bf16, "avx512_bf16"},
                                                {avx512_vnni, "avx512_vnni"},
                                                {avx_vnni, "avx_vnni"},
                                                {amx_tile, "amx_tile"},
                                                {amx_bf16, "amx_bf16"},
                                                {amx_int8, "amx_int8"}};
    for (const auto& [on, name] : all)
        if (on) n.emplace_back(name);
    return n;
}

std::string CpuFeatures::summary() const {
    return fmt::format("{} family {} model {} ({}): {}{}", vendor, family, model,
                       brand.empty() ? "no brand string" : brand, fmt::join(names(), " "),
                       amx_note.empty() || amx_note == "no AMX" ? "" : "; " + amx_note);
}

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = detect();
    return f;
}

const Switches& switches() {
    static const Switches s = read_switches();
    return s;
}

bool avx512_allowed() {
    return cpu_features().avx512_kernels() && switches().isa != "avx2";
}

}  // namespace nazar
