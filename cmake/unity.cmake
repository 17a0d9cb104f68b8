# Unity builds for the programs whose files all parse and instantiate the same header-only
# libraries (docs/reliability.md, CI time): the CLI's files each compile CLI11 2.1 (header-only:
# App, Formatter, Config), json and fmt's templates at -O3, the Python module's pybind11. Merged
# in batches, those are compiled once per batch instead of once per file: the CLI's 16 files
# took 187 CPU s at gcc -O3 one by one, 56 in two batches. On by default, with or without a
# compiler launcher (ccache caches a batch like any file), so that a name clash between two
# files of a batch (two internal functions of the same name) fails every build at once, not
# only CI's; an edit then recompiles its batch. -DNAZAR_UNITY=OFF: one object per file.
# Not the libraries: in the instrumented build (clang -O1 + ASan + UBSan) batches of 8 library
# files took ~2.5-5x the CPU of the same files one by one (nazar/decode's 6 files: 280 s of wall
# time as one batch at load 6, 25 s one by one at load 1), and in the Release build gcc would
# contract a*b+c into FMAs across what were file boundaries, so the library could round
# differently (and run at another speed) from what is measured and shipped.
option(NAZAR_UNITY "Unity builds (batches of files) for the CLI and the Python module" ON)

# nazar_unity(target batch_size): the target's files merged batch_size at a time.
function(nazar_unity target batch)
  if(NAZAR_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${batch}
                          UNITY_BUILD_MODE BATCH)
  endif()
endfunction()
