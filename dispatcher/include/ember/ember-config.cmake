# ember's C++ kernel library as a CMake package: the build settings of ember's native backends
# (ember-cpu, ember-cuda) and of third-party plugins built on the kernel headers. A backend's
# CMakeLists.txt finds it after project() in the directory ember.dispatcher.get_include()/ember:
#
#   find_package(ember CONFIG REQUIRED PATHS "${EMBER_INCLUDE}/ember" NO_DEFAULT_PATH)
#
# and gets:
#
#   C++17 (no compiler extensions), a Release build unless another type was asked for,
#   Python (Interpreter, Development.Module), pybind11 and Threads found,
#   EMBER_INCLUDE_DIR            the directory of <ember/dtype.h>, <ember/python.h>, ...
#   ember_add_module(NAME src…)  a Python extension module NAME built from the sources, with
#                                the kernel headers on its include path, hidden symbols (each
#                                module keeps its own kernel table) and Threads linked.
include_guard(GLOBAL)

set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()

find_package(Python COMPONENTS Interpreter Development.Module REQUIRED)
find_package(pybind11 CONFIG REQUIRED)
find_package(Threads REQUIRED)

get_filename_component(EMBER_INCLUDE_DIR "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)

function(ember_add_module name)
  # NO_EXTRAS: no LTO (keeps incremental rebuilds fast)
  pybind11_add_module(${name} MODULE NO_EXTRAS ${ARGN})
  target_include_directories(${name} PRIVATE "${EMBER_INCLUDE_DIR}")
  set_target_properties(${name} PROPERTIES CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden
                                           VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${name} PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
endfunction()

# ember_generate_kernels(TARGET): the elementwise kernels of every op with a scalar body,
# generated from ember.dispatcher's op definitions (python -m ember.dispatcher.codegen cxx)
# into <ember_generated/elementwise.h> under the build directory, on TARGET's include path.
# The generator runs again when a definition changes and rewrites the header only when its
# text changes (a stamp file records the run), so an unrelated edit recompiles nothing.
function(ember_generate_kernels target)
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/ember_generated")
  set(header "${dir}/elementwise.h")
  set(stamp "${dir}/elementwise.stamp")
  get_filename_component(dispatcher_dir "${EMBER_INCLUDE_DIR}/.." ABSOLUTE)
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS "${dispatcher_dir}/*.py")
  add_custom_command(OUTPUT "${stamp}" BYPRODUCTS "${header}"
    COMMAND "${Python_EXECUTABLE}" -m ember.dispatcher.codegen cxx "${header}"
    COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
    DEPENDS ${sources}
    COMMENT "ember: generating the elementwise kernels from the op definitions"
    VERBATIM)
  add_custom_target(${target}_ember_kernels DEPENDS "${stamp}")
  add_dependencies(${target} ${target}_ember_kernels)
  target_include_directories(${target} PRIVATE "${CMAKE_CURRENT_BINARY_DIR}")
endfunction()
