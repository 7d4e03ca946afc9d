# One place that finds every external dependency; all come from Debian 12
# packages installed by scripts/install-deps.sh.
find_package(Threads REQUIRED)
find_package(Boost 1.81 REQUIRED CONFIG COMPONENTS json)
find_package(OpenSSL REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(CLI11 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.0)

# launchguard-gate runs inside any container image, so it is linked fully
# static (-static): Debian ships static archives of yaml-cpp and hwloc, while
# the imported targets above name their shared objects. A target that sets
# the property LAUNCHGUARD_FULLY_STATIC links these through the archives
# instead; in INTERFACE_LINK_LIBRARIES $<TARGET_PROPERTY:...> reads the
# target being linked, so every other target still links the shared ones.
# fmt (util's Prometheus text only) has no archive in Debian; nothing the gate
# links calls it, so a static target gets none.
find_library(LAUNCHGUARD_YAML_CPP_ARCHIVE NAMES libyaml-cpp.a)
find_library(LAUNCHGUARD_HWLOC_ARCHIVE NAMES libhwloc.a)
set(launchguard_static_head "$<BOOL:$<TARGET_PROPERTY:LAUNCHGUARD_FULLY_STATIC>>")
add_library(launchguard_yaml_cpp INTERFACE)
add_library(launchguard::yaml_cpp ALIAS launchguard_yaml_cpp)
target_link_libraries(launchguard_yaml_cpp INTERFACE
  "$<IF:${launchguard_static_head},${LAUNCHGUARD_YAML_CPP_ARCHIVE},yaml-cpp>")
add_library(launchguard_fmt INTERFACE)
add_library(launchguard::fmt ALIAS launchguard_fmt)
target_link_libraries(launchguard_fmt INTERFACE "$<$<NOT:${launchguard_static_head}>:fmt::fmt>")
add_library(launchguard_hwloc INTERFACE)
add_library(launchguard::hwloc ALIAS launchguard_hwloc)
target_link_libraries(launchguard_hwloc INTERFACE
  "$<IF:${launchguard_static_head},${LAUNCHGUARD_HWLOC_ARCHIVE},PkgConfig::HWLOC>" "$<${launchguard_static_head}:m>")
target_include_directories(launchguard_hwloc INTERFACE "$<TARGET_PROPERTY:PkgConfig::HWLOC,INTERFACE_INCLUDE_DIRECTORIES>")

if(LAUNCHGUARD_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
