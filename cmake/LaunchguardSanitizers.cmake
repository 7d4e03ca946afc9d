# Sanitizer and fuzzing builds (scripts/sanitize.sh): every target, the core
# library included, is compiled with ASan + UBSan so a fuzzer or a unit test
# that reaches a bug stops at it. The normal build is untouched.
option(LAUNCHGUARD_SANITIZE "Build everything with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(LAUNCHGUARD_BUILD_FUZZERS "Build the libFuzzer targets in tests/fuzz (needs clang and LAUNCHGUARD_SANITIZE)" OFF)

if(LAUNCHGUARD_SANITIZE)
  # UBSan findings abort instead of printing and carrying on, so ctest sees them.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

if(LAUNCHGUARD_BUILD_FUZZERS)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "LAUNCHGUARD_BUILD_FUZZERS needs clang (CXX=clang++): libFuzzer ships with it")
  endif()
  if(NOT LAUNCHGUARD_SANITIZE)
    message(FATAL_ERROR "LAUNCHGUARD_BUILD_FUZZERS needs LAUNCHGUARD_SANITIZE=ON: a fuzzer without sanitizers misses most bugs")
  endif()
  # Coverage feedback for the library the fuzzers call; each fuzzer links
  # libFuzzer's main with -fsanitize=fuzzer (tests/fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
