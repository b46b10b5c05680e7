# Unit tests of the host-side evaluation (compiler/host.cmake): .npy I/O,
# seeded inputs, the f64 interpreter and `attnc run`. Each test gets its own
# scratch directory under the build tree.
set(_host_unit ${CMAKE_CURRENT_SOURCE_DIR}/unit)
set(_host_scratch ${CMAKE_CURRENT_BINARY_DIR}/host-scratch)

foreach(_t npy inputs interp)
  add_executable(test_host_${_t} ${_host_unit}/host_${_t}.c)
  target_compile_options(test_host_${_t} PRIVATE ${ATTN_WARNINGS})
  target_link_libraries(test_host_${_t} PRIVATE attn_host)
  add_test(NAME host_${_t} COMMAND test_host_${_t} ${_host_scratch}/${_t})
endforeach()

# `attnc run` needs front_compile (attn_front) and refexec_run (attn_mlir);
# the cross-check compares the interpreter with the reference executor.
if(ATTNC_MLIR)
  foreach(_t run xcheck)
    add_executable(test_host_${_t} ${_host_unit}/host_${_t}.c)
    target_compile_options(test_host_${_t} PRIVATE ${ATTN_WARNINGS})
    target_link_libraries(test_host_${_t} PRIVATE attn_host)
    set_target_properties(test_host_${_t} PROPERTIES LINKER_LANGUAGE CXX)
  endforeach()
  add_test(NAME host_run COMMAND test_host_run ${_host_scratch}/run)
  add_test(NAME host_xcheck COMMAND test_host_xcheck ${_host_scratch}/xcheck
           ${PROJECT_SOURCE_DIR}/examples)
endif()
