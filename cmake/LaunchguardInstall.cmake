# Install helpers shared by every CMakeLists that installs something. Install
# rules stay beside their targets and name the component (the Debian package)
# they belong to: cli (launchguard), slurm (launchguard-slurm), webhook
# (launchguard-webhook); see LaunchguardPackaging.cmake.
include(GNUInstallDirs)

# launchguard_install_conffile(FILE DIRECTORY COMPONENT [RENAME NAME]):
# installs a site-editable file under an absolute DIRECTORY (/etc/...) and
# records it as a conffile of COMPONENT's package, so dpkg keeps the site's
# edits on upgrade and `dpkg -r` leaves it (only `dpkg -P` removes it).
function(launchguard_install_conffile file directory component)
  cmake_parse_arguments(arg "" "RENAME" "" ${ARGN})
  if(NOT IS_ABSOLUTE "${directory}")
    message(FATAL_ERROR "launchguard_install_conffile: ${directory} is not absolute (conffiles live in /etc)")
  endif()
  get_filename_component(name "${file}" NAME)
  if(arg_RENAME)
    set(name "${arg_RENAME}")
  endif()
  install(FILES "${file}" DESTINATION "${directory}" RENAME "${name}" COMPONENT ${component})
  set_property(GLOBAL APPEND PROPERTY launchguard_conffiles_${component} "${directory}/${name}")
endfunction()
