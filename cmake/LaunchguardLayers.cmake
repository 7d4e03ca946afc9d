# launchguard_layer(NAME SOURCES files... [DEPENDS targets...] [PRIVATE_DEPENDS targets...])
#
# One layer of the core: the folder src/NAME as the static library
# launchguard_NAME (alias launchguard::NAME), linked to the layers it DEPENDS
# on and to nothing above it. Its headers are reached as "NAME/file.h" through
# an include directory that holds only a link to src/NAME; the layers below
# come with the targets it links. So the compiler enforces the layering: an
# #include of a layer that is not linked finds no file.
function(launchguard_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 LAYER "" "" "SOURCES;DEPENDS;PRIVATE_DEPENDS")
  set(sources)
  foreach(source IN LISTS LAYER_SOURCES)
    if(IS_ABSOLUTE "${source}")
      list(APPEND sources "${source}")
    else()
      list(APPEND sources "${CMAKE_CURRENT_SOURCE_DIR}/${name}/${source}")
    endif()
  endforeach()
  add_library(launchguard_${name} STATIC ${sources})
  add_library(launchguard::${name} ALIAS launchguard_${name})
  launchguard_include_view(launchguard_${name} PUBLIC "${CMAKE_CURRENT_SOURCE_DIR}/${name}")
  target_link_libraries(launchguard_${name} PUBLIC ${LAYER_DEPENDS} PRIVATE launchguard::warnings ${LAYER_PRIVATE_DEPENDS})
endfunction()

# Adds an include directory to TARGET that holds one link, named after FOLDER's
# last component, to FOLDER: "name/file.h" resolves and nothing else under
# FOLDER's parent does.
function(launchguard_include_view target scope folder)
  get_filename_component(folder_name "${folder}" NAME)
  set(view "${CMAKE_BINARY_DIR}/include-views/${target}")
  file(MAKE_DIRECTORY "${view}")
  if(NOT EXISTS "${view}/${folder_name}")
    file(CREATE_LINK "${folder}" "${view}/${folder_name}" SYMBOLIC)
  endif()
  target_include_directories(${target} ${scope} "$<BUILD_INTERFACE:${view}>")
endfunction()
