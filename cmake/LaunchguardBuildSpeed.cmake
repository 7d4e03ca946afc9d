# Build speed, without changing what is built or tested:
#  - ccache (Debian's package) compiles every target when it is installed,
#    unless a launcher is given (CMAKE_<LANG>_COMPILER_LAUNCHER); its cache
#    is ccache's default ($CCACHE_DIR, else ~/.cache/ccache), so a second
#    run of scripts/test.sh, and each of its stages, reuses the first's.
#  - precompiled headers (launchguard_precompile_headers) for the targets
#    whose units all parse the same heavy headers: GoogleTest and gmock,
#    Boost.JSON, Beast and yaml-cpp.
option(LAUNCHGUARD_CCACHE "Compile through ccache when it is installed" ON)
option(LAUNCHGUARD_PCH "Precompile the heavy headers of the test and server targets" ON)

find_program(LAUNCHGUARD_CCACHE_PROGRAM ccache DOC "ccache, used when LAUNCHGUARD_CCACHE is ON")
mark_as_advanced(LAUNCHGUARD_CCACHE_PROGRAM)
if(LAUNCHGUARD_CCACHE AND LAUNCHGUARD_CCACHE_PROGRAM)
  foreach(lang C CXX)
    if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
      set(CMAKE_${lang}_COMPILER_LAUNCHER "${LAUNCHGUARD_CCACHE_PROGRAM}")
    endif()
  endforeach()
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
