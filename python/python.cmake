# The Python package (python/iosim), included by CMakeLists.txt when pybind11 (Debian's
# pybind11-dev) is found. The module _iosim links the same static libraries as the iosim binary,
# so each source is compiled once; a shared module needs them position-independent. Nothing
# interposes their symbols, so -fno-semantic-interposition keeps GCC inlining and cloning their
# global functions as it does without -fPIC.
set(IOSIM_PY_LIBS iosim_sim iosim_algorithms iosim_transformer iosim_numerics iosim_api iosim_kvcache iosim_reports)
set_target_properties(${IOSIM_PY_LIBS} PROPERTIES POSITION_INDEPENDENT_CODE ON)
foreach(lib IN LISTS IOSIM_PY_LIBS)
  target_compile_options(${lib} PRIVATE -fno-semantic-interposition)
endforeach()
# The flag tables it reads keyword arguments with are iosim_api's (api/run_flags.hpp,
# api/kvcache_flags.hpp, api/layer_flags.hpp), the iosim command's too, so that the flags are
# checked alike.
pybind11_add_module(_iosim NO_EXTRAS  # no LTO: a quicker build
                    ${PROJECT_SOURCE_DIR}/python/iosim_module.cpp)
target_compile_options(_iosim PRIVATE ${IOSIM_WARNINGS})
target_link_libraries(_iosim PRIVATE iosim_reports)  # and, through it, the others
# The module does not export the symbols of the static libraries in it (PyInit__iosim is its API).
target_link_options(_iosim PRIVATE -Wl,--exclude-libs,ALL)
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
  # docs/iosim_tour.ipynb run top to bottom (Debian's jupyter-nbconvert, python3-ipykernel,
  # python3-matplotlib, python3-pandas); fails when a cell raises, e.g. when its A100 table and
  # `iosim demo` differ. The executed copy, plots included, is left in build/docs/.
  add_test(NAME notebook
           COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${CMAKE_BINARY_DIR}/python
                   IOSIM=$<TARGET_FILE:iosim> IOSIM_REPO_DIR=${PROJECT_SOURCE_DIR}
                   PYDEVD_DISABLE_FILE_VALIDATION=1
                   ${Python_EXECUTABLE} -m nbconvert --to notebook --execute
                   --ExecutePreprocessor.timeout=120 --output-dir ${CMAKE_BINARY_DIR}/docs
                   ${PROJECT_SOURCE_DIR}/docs/iosim_tour.ipynb)
  set_tests_properties(notebook PROPERTIES TIMEOUT 240)
  # `pip install .` from a copy of the source tree into a temporary venv, offline, then imported
  # from another folder. It compiles the library again, here unoptimized (CMAKE_ARGS, which
  # setup.py adds after its Release default): what the test checks is the packaging and one small
  # run, and -O0 compiles in about a third of -O3's time (CI's second-longest test otherwise).
  # The model's libraries as unity builds too (IOSIM_UNITY_MODEL): 182 -> 128 CPU s for the whole
  # test on the 2-core machine; unoptimized, g++ contracts nothing into FMAs, so compiling sources
  # together cannot change a number (the reason the Release build keeps them a source at a time).
  # Each library as one unity source (CMAKE_UNITY_BUILD_BATCH_SIZE=0, not 8 a batch): at -O0 the
  # time is mostly the headers and templates each source parses and instantiates again; 211 -> 153
  # CPU s for the whole test (docs/CI_TIMES.md). It also shows any two sources of a library that
  # define one helper name (the clash CMakeLists.txt's unity comment says to look for this way).
  add_test(NAME python_install
           COMMAND ${CMAKE_COMMAND} -E env IOSIM_SOURCE_DIR=${PROJECT_SOURCE_DIR}
                   PYTHON=${Python_EXECUTABLE}
                   "CMAKE_ARGS=-DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O0 -DIOSIM_UNITY_MODEL=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=0"
                   bash ${PROJECT_SOURCE_DIR}/tests/python_install_test.sh)
  set_tests_properties(python_install PROPERTIES TIMEOUT 1800)
endif()
