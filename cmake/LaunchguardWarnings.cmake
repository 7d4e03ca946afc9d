# Warnings and hardening for every launchguard target.
add_library(launchguard_warnings INTERFACE)
add_library(launchguard::warnings ALIAS launchguard_warnings)
target_compile_options(launchguard_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wimplicit-fallthrough
  $<$<COMPILE_LANGUAGE:CXX>:-Wold-style-cast>
  -fstack-protector-strong
  $<$<NOT:$<CONFIG:Debug>>:-D_FORTIFY_SOURCE=2>)
