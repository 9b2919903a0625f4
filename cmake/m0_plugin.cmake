# m0_add_plugin(<target> KIND frontend|executor NAME <name> SOURCES ... [LIBRARIES ...])
#
# Builds a plugin as a MODULE named m0-<kind>-<name>.so (the file name the
# core searches for when a config says `<kind>.type: <name>`), with hidden
# visibility so the descriptor is its only export. Used in-tree and, through
# the installed CMake package, by third-party plugins.
# A third-party project gets here through find_package(m0) and may not have
# included GNUInstallDirs; the install rule below needs CMAKE_INSTALL_LIBDIR.
include(GNUInstallDirs)

function(m0_add_plugin target)
  cmake_parse_arguments(P "" "KIND;NAME" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT P_KIND OR NOT P_NAME)
    message(FATAL_ERROR "m0_add_plugin(${target}): KIND and NAME are required")
  endif()
  add_library(${target} MODULE ${P_SOURCES})
  # In-tree: the `serving` target builds every plugin (top-level CMakeLists.txt).
  set_property(GLOBAL APPEND PROPERTY M0_PLUGIN_TARGETS ${target})
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME "m0-${P_KIND}-${P_NAME}"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  # m0::core: the in-tree alias, or the target find_package(m0) imports.
  target_link_libraries(${target} PRIVATE m0::core ${P_LIBRARIES})
  if(DEFINED M0_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${M0_PLUGIN_OUTPUT_DIR})
  endif()
  if(NOT M0_PLUGIN_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/m0/plugins)
  endif()
endfunction()
