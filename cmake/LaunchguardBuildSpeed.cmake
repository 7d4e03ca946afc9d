# Build speed, without changing what is built or tested:
#  - ccache (Debian's package) compiles every target when it is installed,
#    unless a launcher is given (CMAKE_<LANG>_COMPILER_LAUNCHER); its cache
#    is ccache's default ($CCACHE_DIR, else ~/.cache/ccache), so a second
#    run of scripts/test.sh, and each of its stages, reuses the first's.
#  - precompiled headers (launchguard_precompile_headers) for the targets
#    whose units all parse the same heavy headers: GoogleTest and gmock,
#    Boost.JSON, Beast and yaml-cpp.
#  - test code compiled without optimisation (launchguard_test_code).
#  - unity builds: a target's sources compiled in batches, so the headers and
#    the inline code they share are parsed and optimised once per batch
#    instead of once per file.
option(LAUNCHGUARD_CCACHE "Compile through ccache when it is installed" ON)
option(LAUNCHGUARD_PCH "Precompile the heavy headers of the test and server targets" ON)
option(LAUNCHGUARD_UNITY_BUILD "Compile each target's sources in batches (CMake unity builds)" ON)

find_program(LAUNCHGUARD_CCACHE_PROGRAM ccache DOC "ccache, used when LAUNCHGUARD_CCACHE is ON")
mark_as_advanced(LAUNCHGUARD_CCACHE_PROGRAM)
if(LAUNCHGUARD_CCACHE AND LAUNCHGUARD_CCACHE_PROGRAM)
  foreach(lang C CXX)
    if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
      set(CMAKE_${lang}_COMPILER_LAUNCHER "${LAUNCHGUARD_CCACHE_PROGRAM}")
    endif()
  endforeach()
endif()

# A source that must stay a unit of its own says why beside its
# SKIP_UNITY_BUILD_INCLUSION, a target compiled file by file beside its
# UNITY_BUILD OFF (the core's layers: src/CMakeLists.txt). Names in anonymous
# namespaces meet across the files of a batch: a helper two files need
# belongs in a header.
if(LAUNCHGUARD_UNITY_BUILD)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
endif()

# ccache caches a unit compiled with a precompiled header only when told
# that the header's macros and time stamps may be ignored (ccache's manual,
# "Precompiled headers"); clang must also leave its own time stamp out.
#
# Paths under the source folder are hashed relative to it, and the working
# folder is left out of the hash, so a second clone (CI's, a worktree) reuses
# what the first compiled; the cost is debug info that names the first's folder.
if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache$")
  set(ccache_env CCACHE_BASEDIR=${PROJECT_SOURCE_DIR} CCACHE_NOHASHDIR=1)
  if(LAUNCHGUARD_PCH)
    list(APPEND ccache_env CCACHE_SLOPPINESS=pch_defines,time_macros)
  endif()
  foreach(lang C CXX)
    if(CMAKE_${lang}_COMPILER_LAUNCHER MATCHES "ccache$")
      set(CMAKE_${lang}_COMPILER_LAUNCHER env ${ccache_env} ${CMAKE_${lang}_COMPILER_LAUNCHER})
    endif()
  endforeach()
endif()

# launchguard_precompile_headers(target header...): the headers, precompiled
# once for the target (nothing when LAUNCHGUARD_PCH is OFF).
function(launchguard_precompile_headers target)
  if(NOT LAUNCHGUARD_PCH)
    return()
  endif()
  target_precompile_headers(${target} PRIVATE ${ARGN})
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE "SHELL:-Xclang -fno-pch-timestamp")
  endif()
endfunction()

# launchguard_test_code(target): the target's own units are test code (cases,
# fixtures, helpers), compiled at -O0; the product code it links stays as
# users get it. Most of a test unit's compile time is spent optimising code
# that runs once: at -O0 a unit takes half as long (gcc 12, RelWithDebInfo:
# topology_rules_test.cpp 11.5 s -> 4.3 s; clang with the sanitizers 11.8 s ->
# 4.8 s). _FORTIFY_SOURCE needs optimisation, so these targets go without it
# (LaunchguardWarnings.cmake reads the property).
function(launchguard_test_code target)
  target_compile_options(${target} PRIVATE -O0)
  set_target_properties(${target} PROPERTIES LAUNCHGUARD_TEST_CODE ON)
endfunction()
