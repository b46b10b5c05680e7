# Unit tests of libattnrt (runtime/); none needs a GPU. rt_nodriver: no
# driver at all; rt_check: tensor validation messages; rt_fake: an in-process
# fake driver table; rt_dlopen: the real loading path against rt_fakecuda, a
# stand-in libcuda built here in two variants; rt_abi (where cuda.h exists):
# the restated CUDA constants; rt_divmagic: the launchers' division by a
# multiply and a shift; rt_ring: communicators and the ring, with ranks as
# threads over rt_fakecuda_nccl (rt_fakecuda and the stand-in libnccl
# rt_fakenccl in one module); rt_example_nogpu: installs the runtime into a
# scratch prefix and builds examples/c against it.
set(_rt_unit ${CMAKE_CURRENT_SOURCE_DIR}/unit)

foreach(_t nodriver check fake dlopen divmagic ring)
  add_executable(test_rt_${_t} ${_rt_unit}/rt_${_t}.c)
  target_compile_options(test_rt_${_t} PRIVATE ${ATTN_WARNINGS})
  target_include_directories(test_rt_${_t} PRIVATE ${PROJECT_SOURCE_DIR}/runtime)
  target_link_libraries(test_rt_${_t} PRIVATE attnrt)
endforeach()
add_test(NAME rt_nodriver COMMAND test_rt_nodriver)
set_tests_properties(rt_nodriver PROPERTIES ENVIRONMENT ATTNRT_CUDA_DRIVER=/nonexistent)
add_test(NAME rt_check COMMAND test_rt_check)
add_test(NAME rt_fake COMMAND test_rt_fake)
add_test(NAME rt_divmagic COMMAND test_rt_divmagic)

foreach(_v v1 v2)
  add_library(rt_fakecuda_${_v} MODULE ${_rt_unit}/rt_fakecuda.c)
  target_compile_options(rt_fakecuda_${_v} PRIVATE ${ATTN_WARNINGS})
  set_target_properties(rt_fakecuda_${_v} PROPERTIES C_VISIBILITY_PRESET hidden)
  add_dependencies(test_rt_dlopen rt_fakecuda_${_v})
endforeach()
target_compile_definitions(rt_fakecuda_v2 PRIVATE FAKECUDA_V2)
add_test(NAME rt_dlopen COMMAND test_rt_dlopen $<TARGET_FILE:rt_fakecuda_v2>
         $<TARGET_FILE:rt_fakecuda_v1>)

find_package(Threads REQUIRED)
add_library(rt_fakecuda_nccl MODULE ${_rt_unit}/rt_fakecuda.c ${_rt_unit}/rt_fakenccl.c)
target_compile_options(rt_fakecuda_nccl PRIVATE ${ATTN_WARNINGS})
target_compile_definitions(rt_fakecuda_nccl PRIVATE FAKECUDA_V2)
target_link_libraries(rt_fakecuda_nccl PRIVATE Threads::Threads)
set_target_properties(rt_fakecuda_nccl PROPERTIES C_VISIBILITY_PRESET hidden)
add_dependencies(test_rt_ring rt_fakecuda_nccl)
add_test(NAME rt_ring COMMAND test_rt_ring $<TARGET_FILE:rt_fakecuda_nccl>)

find_path(ATTN_CUDA_INCLUDE cuda.h PATHS $ENV{CUDA_PATH}/include /usr/local/cuda/include
          NO_DEFAULT_PATH)
if(ATTN_CUDA_INCLUDE)
  add_executable(test_rt_abi ${_rt_unit}/rt_abi.c)
  target_compile_options(test_rt_abi PRIVATE ${ATTN_WARNINGS})
  target_include_directories(test_rt_abi PRIVATE ${PROJECT_SOURCE_DIR}/runtime ${ATTN_CUDA_INCLUDE})
  add_test(NAME rt_abi COMMAND test_rt_abi)
endif()

# The example's CMake project built against the installed runtime, with this
# build's compiler and sanitizer flags (the installed libraries carry them).
set(_rt_flags "")
if(ATTN_SANITIZE)
  set(_rt_flags "-fsanitize=address,undefined -fno-omit-frame-pointer")
endif()
if(ATTN_FUZZ)
  set(_rt_flags "${_rt_flags} -fsanitize=fuzzer-no-link")
endif()
add_test(NAME rt_example_nogpu
         COMMAND sh ${_rt_unit}/rt_example_nogpu.sh ${CMAKE_COMMAND} ${PROJECT_BINARY_DIR}
                 ${PROJECT_SOURCE_DIR}/examples/c ${CMAKE_CURRENT_BINARY_DIR}/rt-example
                 ${CMAKE_C_COMPILER} "${_rt_flags}")
