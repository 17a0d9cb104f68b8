# Compiler flags shared by every nazar target.
if(NAZAR_NATIVE)
  set(NAZAR_ARCH_FLAGS -march=native)
else()
  # x86-64-v3: AVX2 + FMA + F16C, runs on every machine from Haswell on.
  set(NAZAR_ARCH_FLAGS -march=x86-64-v3 -mtune=generic)
endif()
# -fno-math-errno and -fno-trapping-math let GCC vectorise the branch-free exp/tanh/sigmoid
# loops (nazar never enables FP traps; NaN/inf semantics are kept: this is not -ffast-math).
add_compile_options(${NAZAR_ARCH_FLAGS} -fno-math-errno -fno-trapping-math)

if(NAZAR_SANITIZE)
  add_compile_options(-fsanitize=${NAZAR_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${NAZAR_SANITIZE})
endif()

function(nazar_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter
                         $<$<CONFIG:Debug>:-Werror>)
endfunction()
