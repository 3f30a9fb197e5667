# The installed package: `cmake --install build --prefix P` puts the libraries, their headers and
# a TenetConfig.cmake in P; a project then finds them with find_package(Tenet) and links
# Tenet::tenet (the API of tenet/tenet.hpp, with every layer below it) or a layer alone
# (Tenet::topo, Tenet::synth, Tenet::sim, ...).
#
# Layout under P: lib/libtenet_*.a, include/tenet/<layer>/... (the public headers, below, in the
# source tree's layout, so that their includes, rooted at the repository root, resolve with
# include/tenet on the path), lib/cmake/Tenet/.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TENET_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/tenet)
set(TENET_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tenet)
# The public headers: the API (tenet/tenet.hpp), the layers' entry points a program may call
# beside it, and every header they include, transitively (tenet_public_headers). Only those are
# installed: the rest (the synthesizer's matchers, plans and searches, the simulator's engine
# internals, the formats' parsers) is internal to the libraries.
set(TENET_PUBLIC_ENTRY_HEADERS
  tenet/tenet.hpp
  topo/io.hpp topo/generators.hpp topo/bounds.hpp
  synth/producers.hpp synth/cost/timing.hpp synth/cost/rescale.hpp
  synth/formats/algorithm_json.hpp synth/cache/algorithm_cache.hpp
  chakra/algorithm_files.hpp
  sim/workload.hpp sim/recorded_trace.hpp
  astra/bundle.hpp)

# `out`: TENET_PUBLIC_ENTRY_HEADERS and the repository's headers they include, transitively (paths
# from the repository root). A change to any of them configures again.
function(tenet_public_headers out)
  set(todo ${TENET_PUBLIC_ENTRY_HEADERS})
  set(done "")
  while(todo)
    list(POP_FRONT todo header)
    if(header IN_LIST done)
      continue()
    endif()
    list(APPEND done ${header})
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
      ${PROJECT_SOURCE_DIR}/${header})
    file(STRINGS ${PROJECT_SOURCE_DIR}/${header} includes REGEX "^#include \"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" included "${line}")
      if(EXISTS ${PROJECT_SOURCE_DIR}/${included})
        list(APPEND todo ${included})
      endif()
    endforeach()
  endwhile()
  set(${out} ${done} PARENT_SCOPE)
endfunction()

# tenet_library(<target> <name>): <target>'s include directory (the repository root when built
# here, include/tenet installed), and its place in the package as Tenet::<name>.
function(tenet_library target name)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${TENET_INSTALL_INCLUDEDIR}>)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  add_library(Tenet::${name} ALIAS ${target})
  set_property(GLOBAL APPEND PROPERTY TENET_PACKAGE_TARGETS ${target})
endfunction()

# The install rules of every library tenet_library named, with the targets they link (LEMON's
# wrapper), their headers and the package's config files.
function(tenet_install_package)
  get_property(targets GLOBAL PROPERTY TENET_PACKAGE_TARGETS)
  install(TARGETS ${targets} lemon_dep EXPORT TenetTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  tenet_public_headers(headers)
  foreach(header IN LISTS headers)
    get_filename_component(folder ${header} DIRECTORY)
    install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${TENET_INSTALL_INCLUDEDIR}/${folder})
  endforeach()
  # The Chakra schema's generated header, beside chakra/et.hpp which includes it.
  install(FILES ${PROJECT_BINARY_DIR}/chakra/et_def.pb.h DESTINATION ${TENET_INSTALL_INCLUDEDIR}/chakra)
  install(EXPORT TenetTargets NAMESPACE Tenet:: DESTINATION ${TENET_INSTALL_CMAKEDIR})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TenetConfig.cmake.in
    ${PROJECT_BINARY_DIR}/TenetConfig.cmake INSTALL_DESTINATION ${TENET_INSTALL_CMAKEDIR})
  # 0.x: a minor version may change the API (docs/library.md).
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/TenetConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/TenetConfig.cmake ${PROJECT_BINARY_DIR}/TenetConfigVersion.cmake
    DESTINATION ${TENET_INSTALL_CMAKEDIR})
endfunction()
