# Warnings and hardening for every launchguard target (test code, compiled
# unoptimised, goes without _FORTIFY_SOURCE: launchguard_test_code).
#
# LAUNCHGUARD_WARNINGS_AS_ERRORS turns every warning in the project's own code
# into an error. scripts/test.sh (and so CI) builds with it on; it is off by
# default so that a newer compiler's new warning never stops a site's build.
option(LAUNCHGUARD_WARNINGS_AS_ERRORS "Treat warnings in launchguard's own code as errors" OFF)
add_library(launchguard_warnings INTERFACE)
add_library(launchguard::warnings ALIAS launchguard_warnings)
target_compile_options(launchguard_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wimplicit-fallthrough
  $<$<COMPILE_LANGUAGE:CXX>:-Wold-style-cast>
  -fstack-protector-strong
  $<$<AND:$<NOT:$<CONFIG:Debug>>,$<NOT:$<BOOL:$<TARGET_PROPERTY:LAUNCHGUARD_TEST_CODE>>>>:-D_FORTIFY_SOURCE=2>)
if(LAUNCHGUARD_WARNINGS_AS_ERRORS)
  target_compile_options(launchguard_warnings INTERFACE -Werror)
endif()
