# Extra CTest entries of tests/dist (data-parallel training; owner: mpi), included by
# tests/CMakeLists.txt. mpirun -np 2 on a tiny model; skipped (77) without mpirun and in the
# sanitizer build (the script says why).
if(NOT DEFINED NAZAR_WITH_MPI)
  set(NAZAR_WITH_MPI 0)
endif()
if(NAZAR_SANITIZE)
  set(_nazar_dist_sanitize 1)
else()
  set(_nazar_dist_sanitize 0)
endif()
add_executable(mpi_gradient_sum ${CMAKE_CURRENT_SOURCE_DIR}/dist/mpi_gradient_sum.cpp)
target_link_libraries(mpi_gradient_sum PRIVATE nazar)
target_include_directories(mpi_gradient_sum PRIVATE ${PROJECT_SOURCE_DIR})
nazar_set_warnings(mpi_gradient_sum)
foreach(part equivalence resume faults)
  add_test(NAME dist.mpirun_${part}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/dist/test_mpirun.sh $<TARGET_FILE:nazar_cli>
                   ${NAZAR_WITH_MPI} ${_nazar_dist_sanitize} ${part}
                   $<TARGET_FILE:mpi_gradient_sum>)
  set_tests_properties(dist.mpirun_${part} PROPERTIES LABELS dist SKIP_RETURN_CODE 77 TIMEOUT 120)
endforeach()
