# The Python package (python/iosim), included by CMakeLists.txt when pybind11 (Debian's
# pybind11-dev) is found. The module _iosim compiles the libraries' sources again as
# position-independent code, so that the iosim binary's own objects keep their flags.
set(IOSIM_PY_SOURCES
    ${PROJECT_SOURCE_DIR}/python/iosim_module.cpp ${PROJECT_SOURCE_DIR}/cli/run_flags.cpp
    ${PROJECT_SOURCE_DIR}/cli/kvcache_flags.cpp)
foreach(lib iosim_sim iosim_algorithms iosim_numerics iosim_api iosim_kvcache iosim_reports
            iosim_sweep iosim_validation)
  get_target_property(lib_sources ${lib} SOURCES)
  list(APPEND IOSIM_PY_SOURCES ${lib_sources})
endforeach()
pybind11_add_module(_iosim NO_EXTRAS ${IOSIM_PY_SOURCES})  # no LTO: a quicker build
add_dependencies(_iosim iosim_version)
target_include_directories(_iosim PRIVATE ${PROJECT_SOURCE_DIR} ${CLI11_INCLUDE_DIR})
target_compile_options(_iosim PRIVATE ${IOSIM_WARNINGS})
target_link_libraries(_iosim PRIVATE yaml-cpp fmt::fmt Eigen3::Eigen
                      nlohmann_json::nlohmann_json Threads::Threads)
set_target_properties(_iosim PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/python/iosim)

# build/python/iosim is the importable package: the module beside the Python files.
file(GLOB IOSIM_PY_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/iosim/*.py)
set(IOSIM_PY_COPIES "")
foreach(py IN LISTS IOSIM_PY_FILES)
  get_filename_component(name ${py} NAME)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/python/iosim/${name}
                     COMMAND ${CMAKE_COMMAND} -E copy ${py} ${CMAKE_BINARY_DIR}/python/iosim/${name}
                     DEPENDS ${py} VERBATIM)
  list(APPEND IOSIM_PY_COPIES ${CMAKE_BINARY_DIR}/python/iosim/${name})
endforeach()
add_custom_target(iosim_python ALL DEPENDS _iosim ${IOSIM_PY_COPIES})

if(IOSIM_BUILD_TESTS)
  # pytest (Debian's python3-pytest) over python/tests, with the package from the build folder.
  add_test(NAME python
           COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${CMAKE_BINARY_DIR}/python
                   IOSIM=$<TARGET_FILE:iosim> IOSIM_REPO_DIR=${PROJECT_SOURCE_DIR}
                   ${Python_EXECUTABLE} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/python/tests)
endif()
