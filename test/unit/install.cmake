# install: test/install/run.sh installs this build into a scratch prefix and
# uses it as a user would: the installed attnc runs (its RUNPATH finds
# LLVM/MLIR), and a CMake project (find_package(attnrt) + attnc_add_kernel)
# and a Makefile (pkg-config) build C and C++ programs from two examples and
# run them on the CPU; with ptxas, the GPU interface is built and linked too.
# Flags as in rt_example_nogpu: the installed libraries carry the sanitizers.
set(_install_flags "")
if(ATTN_SANITIZE)
  set(_install_flags "-fsanitize=address,undefined -fno-omit-frame-pointer")
endif()
if(ATTN_FUZZ)
  set(_install_flags "${_install_flags} -fsanitize=fuzzer-no-link")
endif()
add_test(NAME install
         COMMAND sh ${PROJECT_SOURCE_DIR}/test/install/run.sh ${CMAKE_COMMAND} ${PROJECT_BINARY_DIR}
                 ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/install-test ${CMAKE_C_COMPILER}
                 ${CMAKE_CXX_COMPILER} "${_install_flags}" "${PTXAS_EXECUTABLE}")
