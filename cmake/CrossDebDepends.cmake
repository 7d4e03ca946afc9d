# Run by cpack (CPACK_PROJECT_CONFIG_FILE) in a cross build, in place of
# dpkg-shlibdeps: that looks each library up in this machine's dpkg database,
# which holds none of the target's (they are in the sysroot,
# scripts/arm64-sysroot.sh). Each package depends on the packages that ship
# the shared libraries its binaries load (readelf's NEEDED entries), at least
# at the upstream version of the sysroot's, which the binaries were linked
# against; a library no sysroot package ships stops cpack.
#
# Inputs (LaunchguardPackaging.cmake): CPACK_LAUNCHGUARD_READELF,
# CPACK_LAUNCHGUARD_SHLIBS (lines "SONAME PACKAGE VERSION"), and
# CPACK_LAUNCHGUARD_BINARIES, a file setting launchguard_binaries_<component>.
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
include("${CPACK_LAUNCHGUARD_BINARIES}")
file(STRINGS "${CPACK_LAUNCHGUARD_SHLIBS}" launchguard_shlibs)

foreach(component IN LISTS CPACK_COMPONENTS_ALL)
  set(depends)
  foreach(binary IN LISTS launchguard_binaries_${component})
    execute_process(COMMAND "${CPACK_LAUNCHGUARD_READELF}" -d "${binary}" OUTPUT_VARIABLE dynamic
                    RESULT_VARIABLE status)
    if(NOT status EQUAL 0)
      message(FATAL_ERROR "${CPACK_LAUNCHGUARD_READELF} -d ${binary} failed (${status})")
    endif()
    string(REGEX MATCHALL "Shared library: \\[[^]]+\\]" needed "${dynamic}")
    foreach(entry IN LISTS needed)
      string(REGEX REPLACE "Shared library: \\[([^]]+)\\]" "\\1" soname "${entry}")
      set(dependency)
      foreach(line IN LISTS launchguard_shlibs)
        string(FIND "${line}" "${soname} " at)
        if(at EQUAL 0)
          string(REPLACE " " ";" fields "${line}")
          list(GET fields 1 package)
          list(GET fields 2 version)
          # 2.36-9+deb12u14 -> 2.36: any Debian revision of that release will do.
          string(REGEX REPLACE "-[^-]*$" "" upstream "${version}")
          set(dependency "${package} (>= ${upstream})")
          break()
        endif()
      endforeach()
      if(NOT dependency)
        message(FATAL_ERROR "${binary} loads ${soname}, which no package of the sysroot ships "
                            "(${CPACK_LAUNCHGUARD_SHLIBS})")
      endif()
      list(APPEND depends "${dependency}")
    endforeach()
  endforeach()
  if(depends)
    list(REMOVE_DUPLICATES depends)
    list(SORT depends)
    list(JOIN depends ", " joined)
    string(TOUPPER "${component}" upper)
    if(CPACK_DEBIAN_${upper}_PACKAGE_DEPENDS)
      set(CPACK_DEBIAN_${upper}_PACKAGE_DEPENDS "${CPACK_DEBIAN_${upper}_PACKAGE_DEPENDS}, ${joined}")
    else()
      set(CPACK_DEBIAN_${upper}_PACKAGE_DEPENDS "${joined}")
    endif()
  endif()
endforeach()
