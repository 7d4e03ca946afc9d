# Debian packages, one per install component: `cpack -G DEB` in the build dir
# (tests/integration/deb builds, installs and removes them).
#   launchguard          (cli)     the CLI, the static launch gate, the enroot hook script, the profiles, the docs
#   launchguard-slurm    (slurm)   both SPANK plugins in Slurm's PluginDir, a plugstack snippet
#   launchguard-webhook  (webhook) the admission webhook and a systemd unit
# Library dependencies come from dpkg-shlibdeps (package dpkg-dev); the Slurm
# dependency is set by slurm-plugin/CMakeLists.txt from the headers it was
# built against.
set(LAUNCHGUARD_PACKAGE_MAINTAINER "launchguard maintainers <launchguard@localhost>" CACHE STRING
    "Maintainer field of the Debian packages")

set(CPACK_PACKAGE_NAME launchguard)
set(CPACK_PACKAGE_VENDOR launchguard)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "${LAUNCHGUARD_PACKAGE_MAINTAINER}")
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_DIRECTORY "${CMAKE_BINARY_DIR}/packages")
# Absolute destinations (/etc) must land in the package, never on this
# machine: DESTDIR staging. The packages install under /usr whatever prefix
# the build was configured with.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
# Debug information stays in the build; the packages are stripped.
set(CPACK_STRIP_FILES ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A cross build (cmake/toolchains/aarch64-linux-gnu.cmake) packages for the
# machine it builds for: its architecture (cpack would ask this machine's
# dpkg), Slurm's PluginDir of that triplet (slurm-plugin/CMakeLists.txt), and
# Depends from the sysroot's packages, at cpack time (CrossDebDepends.cmake).
if(CMAKE_CROSSCOMPILING)
  if(CMAKE_SYSTEM_PROCESSOR STREQUAL "aarch64")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
  else()
    message(FATAL_ERROR "no Debian architecture known for a cross build to ${CMAKE_SYSTEM_PROCESSOR}")
  endif()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
  set(CPACK_LAUNCHGUARD_READELF "${CMAKE_READELF}")
  set(CPACK_LAUNCHGUARD_SHLIBS "${CMAKE_SYSROOT}/.launchguard-shlibs")
  set(CPACK_LAUNCHGUARD_BINARIES "${CMAKE_BINARY_DIR}/packaging/cross-binaries.cmake")
  set(binaries_text "")
  foreach(pair IN ITEMS cli:launchguard cli:launchguard-gate webhook:launchguard-webhook slurm:spank_launchguard
                        slurm:spank_launchguard_core slurm:spank_launchguard_core_yaml slurm:spank_launchguard_prolog)
    string(REPLACE ":" ";" pair "${pair}")
    list(GET pair 0 component)
    list(GET pair 1 target)
    if(TARGET ${target})
      string(APPEND binaries_text "list(APPEND launchguard_binaries_${component} \"$<TARGET_FILE:${target}>\")\n")
    endif()
  endforeach()
  file(GENERATE OUTPUT "${CPACK_LAUNCHGUARD_BINARIES}" CONTENT "${binaries_text}")
  set(CPACK_PROJECT_CONFIG_FILE "${CMAKE_CURRENT_LIST_DIR}/CrossDebDepends.cmake")
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME launchguard)
set(CPACK_COMPONENT_CLI_DESCRIPTION [[GPU launch checks: CLI, enroot hook and profiles
launchguard inspects a GPU training launch the way NCCL will see it and holds
it against the cluster's reference profile. This package holds the
launchguard command, launchguard-gate (the static launch gate the
Kubernetes webhook injects into GPU containers), the enroot hook script
(link it into /etc/enroot/hooks.d), the shipped profiles and the
documentation.]])
set(CPACK_DEBIAN_SLURM_PACKAGE_NAME launchguard-slurm)
set(CPACK_COMPONENT_SLURM_DESCRIPTION [[GPU launch checks: Slurm SPANK plugins
spank_launchguard.so checks every task in task_init, inside the pyxis
container when there is one; spank_launchguard_prolog.so checks the node in
the job prolog. Both are small: the checks are in spank_launchguard_core.so
(spank_launchguard_core_yaml.so for a YAML profile), which only slurmstepd,
slurmd and the prolog process load. Enable them in /etc/slurm/plugstack.conf.d/zz-launchguard.conf.]])
set(CPACK_DEBIAN_WEBHOOK_PACKAGE_NAME launchguard-webhook)
set(CPACK_COMPONENT_WEBHOOK_DESCRIPTION [[GPU launch checks: Kubernetes admission webhook
launchguard-webhook judges GPU workloads at admission and patches or denies
them. For a webhook run outside the cluster, with a systemd unit; in a
cluster, install the Helm chart instead.]])

# Only the three packages, whatever other install rules a dependency adds.
get_cmake_property(installed_components COMPONENTS)
set(CPACK_COMPONENTS_ALL)
foreach(component IN ITEMS cli slurm webhook)
  if(component IN_LIST installed_components)
    list(APPEND CPACK_COMPONENTS_ALL ${component})
    get_property(conffiles GLOBAL PROPERTY launchguard_conffiles_${component})
    if(conffiles)
      string(TOUPPER "${component}" upper)
      list(JOIN conffiles "\n" conffiles_text)
      file(WRITE "${CMAKE_BINARY_DIR}/packaging/${component}/conffiles" "${conffiles_text}\n")
      set(CPACK_DEBIAN_${upper}_PACKAGE_CONTROL_EXTRA "${CMAKE_BINARY_DIR}/packaging/${component}/conffiles")
    endif()
  endif()
endforeach()

include(CPack)
