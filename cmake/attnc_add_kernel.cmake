# attnc_add_kernel.cmake: compile .attn files at build time, from the
# installed attnrt package (attnrtConfig.cmake includes this file).
#
#   attnc_add_kernel(<target> <file.attn>
#                    [TARGETS <t>...]     cpu and/or one GPU target (sm_80, sm_90a,
#                                         or sm_80,sm_90a: both, attnc's default
#                                         GPU bundle); default sm_80,sm_90a
#                    [NAME <base>]        output base name; default the file's stem
#                    [OPTIONS <opt>...])  more attnc options (e.g. --f64 for cpu)
#
# Per call, attnc writes into <binary dir>/attnc_gen/<target>/:
#   cpu/<base>.c, cpu/<base>.h    attnc --target=cpu --emit=c (needs libm; OpenMP
#                                 when found)
#   gpu/<base>.{c,h,ptx,...}      attnc --target=<t> -o (needs ptxas at build time;
#                                 links attnrt::attnrt): sm_80 adds sm80.cubin and
#                                 sm90.cubin, sm_90a sm90.cubin, sm_80,sm_90a both
#                                 targets' files (sm90a.ptx, sm90a.cubin too)
# adds the .c files to <target>, and <binary dir>/attnc_gen/<target> to its
# include path: sources include "cpu/<base>.h" or "gpu/<base>.h". The rules
# depend on the .attn file and on attnc, so editing either recompiles.
#
# attnc is the one next to this package (<prefix>/bin/attnc) unless ATTNC is
# set (-DATTNC=/path/to/attnc, or a name looked up on PATH).

# Functions keep the policies in force where they are defined: these, not
# the caller's (if(IN_LIST), $<C_COMPILER_ID:a,b>).
cmake_policy(PUSH)
cmake_policy(VERSION 3.16...3.28)

# The prefix is kept in a global property: a variable set here would be
# gone, or changed by another package, when the function is called.
get_filename_component(_attnc_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set_property(GLOBAL PROPERTY ATTNC_DEFAULT_PATH "${_attnc_prefix}/bin/attnc")
unset(_attnc_prefix)

# Where the attnc to run is: ATTNC if set, else the installed one.
function(_attnc_locate out)
  if(ATTNC)
    if(IS_ABSOLUTE "${ATTNC}")
      set(_exe "${ATTNC}")
    else()
      find_program(ATTNC_EXECUTABLE NAMES "${ATTNC}")
      set(_exe "${ATTNC_EXECUTABLE}")
    endif()
  else()
    get_property(_exe GLOBAL PROPERTY ATTNC_DEFAULT_PATH)
  endif()
  if(NOT _exe OR NOT EXISTS "${_exe}")
    message(FATAL_ERROR "attnc_add_kernel: attnc not found (looked for '${_exe}'); install "
                        "attnc with the runtime or pass -DATTNC=/path/to/attnc")
  endif()
  set(${out} "${_exe}" PARENT_SCOPE)
endfunction()

# One attnc run, the sources it gives added to the target (see the top).
function(attnc_add_kernel target file)
  cmake_parse_arguments(PARSE_ARGV 2 _ak "" "NAME" "TARGETS;OPTIONS")
  if(_ak_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "attnc_add_kernel: unexpected arguments: ${_ak_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "attnc_add_kernel: '${target}' is not a target")
  endif()
  get_property(_langs GLOBAL PROPERTY ENABLED_LANGUAGES)
  if(NOT "C" IN_LIST _langs)
    message(FATAL_ERROR "attnc_add_kernel: the generated sources are C; enable C "
                        "(project(... LANGUAGES C CXX))")
  endif()
  get_filename_component(file "${file}" ABSOLUTE)
  if(NOT EXISTS "${file}")
    message(FATAL_ERROR "attnc_add_kernel: no file '${file}'")
  endif()
  if(NOT _ak_NAME)
    get_filename_component(_ak_NAME "${file}" NAME_WE)
  endif()
  if(NOT _ak_TARGETS)
    set(_ak_TARGETS "sm_80,sm_90a")
  endif()
  _attnc_locate(_attnc)

  set(_root "${CMAKE_CURRENT_BINARY_DIR}/attnc_gen/${target}")
  set(_gpu "")
  foreach(_t IN LISTS _ak_TARGETS)
    if(_t STREQUAL "cpu")
      set(_dir "${_root}/cpu")
      set(_outs "${_dir}/${_ak_NAME}.c" "${_dir}/${_ak_NAME}.h")
      set(_cmd --target=cpu --emit=c ${_ak_OPTIONS} "${file}" -o "${_dir}/${_ak_NAME}.c")
    elseif(_t MATCHES "^sm_[0-9]+a?(,sm_[0-9]+a?)?$")
      # The GPU interface of a file launches one kernel per block, whose
      # images cover every GPU: two GPU requests would define the same names
      # twice (sm_80,sm_90a is the one request for both targets).
      if(_gpu)
        message(FATAL_ERROR "attnc_add_kernel: one GPU target per call (${_gpu} and ${_t}); "
                            "sm_80,sm_90a gives both targets' kernels in one interface")
      endif()
      set(_gpu ${_t})
      set(_dir "${_root}/gpu")
      set(_b "${_dir}/${_ak_NAME}")
      set(_outs "${_b}.c" "${_b}.h" "${_b}.ptx")
      # the files attnc writes for each request (docs/cli.md, output files)
      if(_t STREQUAL "sm_80")
        list(APPEND _outs "${_b}.sm80.cubin" "${_b}.sm90.cubin")
      elseif(_t STREQUAL "sm_90a")
        list(APPEND _outs "${_b}.sm90.cubin")
      elseif(_t STREQUAL "sm_80,sm_90a")
        list(APPEND _outs "${_b}.sm80.cubin" "${_b}.sm90.cubin" "${_b}.sm90a.ptx"
             "${_b}.sm90a.cubin")
      endif()
      set(_cmd --target=${_t} ${_ak_OPTIONS} "${file}" -o "${_dir}/${_ak_NAME}")
    else()
      message(FATAL_ERROR
              "attnc_add_kernel: unknown target '${_t}' (cpu, sm_80, sm_90a, sm_80,sm_90a, sm_100a)")
    endif()
    get_filename_component(_fname "${file}" NAME)
    add_custom_command(
      OUTPUT ${_outs}
      COMMAND ${CMAKE_COMMAND} -E make_directory "${_dir}"
      COMMAND "${_attnc}" ${_cmd}
      DEPENDS "${file}" "${_attnc}"
      COMMENT "attnc --target=${_t} ${_fname} (${target})"
      VERBATIM)
    list(GET _outs 0 _src)
    target_sources(${target} PRIVATE ${_outs})
    # Generated code is not the user's to fix: its warnings (unused locals,
    # OpenMP pragmas without OpenMP) must not fail a -Werror build.
    set_source_files_properties("${_src}" PROPERTIES COMPILE_OPTIONS
                                "$<$<C_COMPILER_ID:GNU,Clang,AppleClang>:-w>")
  endforeach()

  target_include_directories(${target} PUBLIC "$<BUILD_INTERFACE:${_root}>")
  if("cpu" IN_LIST _ak_TARGETS)
    find_package(OpenMP QUIET COMPONENTS C)
    if(OpenMP_C_FOUND)
      target_link_libraries(${target} PRIVATE OpenMP::OpenMP_C)
    endif()
    if(UNIX)
      target_link_libraries(${target} PRIVATE m)
    endif()
  endif()
  if(_gpu)
    target_link_libraries(${target} PRIVATE attnrt::attnrt)
  endif()
endfunction()

cmake_policy(POP)
