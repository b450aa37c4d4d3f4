# ufuncgen's CMake function: signature files in, an importable extension module out.
#
#   find_package(Python REQUIRED COMPONENTS Interpreter Development.Module NumPy)
#   include(<ufuncgen package>/cmake/ufuncgen.cmake)    # python -m ufuncgen cmake-dir prints it
#   ufuncgen_add_module(fast MODULE mypkg.fast SIGNATURES fast.ufunc)
#
# examples/downstream (fastgeo) is a whole package built this way with scikit-build-core.
#
# The same function builds ufuncgen.examples and every `ufuncgen build`, so the two are
# compiled with the same flags.
include_guard(GLOBAL)

# This file sits in the ufuncgen package: site-packages/ufuncgen/cmake once installed, where
# the generator (ufuncgen/gen), its templates and the C headers (ufuncgen/include) sit beside
# it; or python/ufuncgen/cmake in ufuncgen's source tree (building ufuncgen itself, or any
# build from an editable install), where they are gen/, templates/ and src/include at the top.
get_filename_component(_UFUNCGEN_PACKAGE_DIR "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
# This folder, for the functions below (inside a function CMAKE_CURRENT_LIST_DIR is the caller's).
set(_UFUNCGEN_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")
if(EXISTS "${_UFUNCGEN_PACKAGE_DIR}/gen/__init__.py")
  set(_UFUNCGEN_GEN_DIR "${_UFUNCGEN_PACKAGE_DIR}/gen")
  set(_UFUNCGEN_TEMPLATE_DIR "${_UFUNCGEN_PACKAGE_DIR}/templates")
  set(_UFUNCGEN_INCLUDE_DIR "${_UFUNCGEN_PACKAGE_DIR}/include")
  # `python -m ufuncgen.gen` from the installed package.
  get_filename_component(_UFUNCGEN_PYTHONPATH "${_UFUNCGEN_PACKAGE_DIR}/.." ABSOLUTE)
else()
  get_filename_component(_UFUNCGEN_SOURCE_DIR "${_UFUNCGEN_PACKAGE_DIR}/../.." ABSOLUTE)
  set(_UFUNCGEN_GEN_DIR "${_UFUNCGEN_SOURCE_DIR}/gen")
  set(_UFUNCGEN_TEMPLATE_DIR "${_UFUNCGEN_SOURCE_DIR}/templates")
  set(_UFUNCGEN_INCLUDE_DIR "${_UFUNCGEN_SOURCE_DIR}/src/include")
  if(NOT EXISTS "${_UFUNCGEN_GEN_DIR}/__init__.py")
    message(FATAL_ERROR "ufuncgen.cmake: no generator in ${_UFUNCGEN_PACKAGE_DIR}/gen "
                        "(installed) nor in ${_UFUNCGEN_GEN_DIR} (source tree)")
  endif()
  # `python -m ufuncgen.gen` from the source tree: a stand-in package `ufuncgen` in the build
  # directory whose only submodule search location is the top of the source tree, so that
  # ufuncgen.gen is gen/ as it is now (no copy to go stale), and gen/render.py finds
  # templates/ beside it.  The generator needs nothing else from ufuncgen.
  set(_UFUNCGEN_PYTHONPATH "${CMAKE_BINARY_DIR}/ufuncgen-generator")
  # The headers generated from the generator's tables (ufuncgen/element_types.h, limits.h;
  # gen/runtime_headers.py) are not in src/include: they are written at build time here,
  # and an installed ufuncgen has them in its include/ with the others.
  set(_UFUNCGEN_GENERATED_INCLUDE_DIR "${CMAKE_BINARY_DIR}/ufuncgen-generator/include")
  file(CONFIGURE OUTPUT "${_UFUNCGEN_PYTHONPATH}/ufuncgen/__init__.py" CONTENT
"\"\"\"Written by ufuncgen.cmake: the ufuncgen package as the generator sees it when run from
ufuncgen's source tree (${_UFUNCGEN_SOURCE_DIR}), ufuncgen.gen being its gen/.\"\"\"
__path__ = [r\"${_UFUNCGEN_SOURCE_DIR}\"]
" @ONLY)
endif()
# The generator runs with _UFUNCGEN_PYTHONPATH put in front of the PYTHONPATH CMake was
# configured with, not in place of it: pip's isolated build environments (a downstream
# package's build, or ufuncgen's own from a fresh venv) reach their requirements, jinja2
# among them, through a PYTHONPATH entry.
if(NOT "$ENV{PYTHONPATH}" STREQUAL "")
  if(WIN32)
    string(APPEND _UFUNCGEN_PYTHONPATH "$<SEMICOLON>$ENV{PYTHONPATH}")   # one COMMAND argument
  else()
    string(APPEND _UFUNCGEN_PYTHONPATH ":$ENV{PYTHONPATH}")
  endif()
endif()
file(GLOB _UFUNCGEN_GENERATOR_FILES
     "${_UFUNCGEN_GEN_DIR}/*.py" "${_UFUNCGEN_TEMPLATE_DIR}/*.j2"
     "${_UFUNCGEN_INCLUDE_DIR}/ufuncgen/*.h")

# The generated headers, in a source-tree build: the target ufuncgen_runtime_headers writes
# them, and everything compiled against the headers depends on it.
set(_UFUNCGEN_INCLUDE_DIRS "${_UFUNCGEN_INCLUDE_DIR}")
if(DEFINED _UFUNCGEN_GENERATED_INCLUDE_DIR)
  set(_UFUNCGEN_RUNTIME_HEADERS
      "${_UFUNCGEN_GENERATED_INCLUDE_DIR}/ufuncgen/element_types.h"
      "${_UFUNCGEN_GENERATED_INCLUDE_DIR}/ufuncgen/limits.h")
  add_custom_command(
    OUTPUT ${_UFUNCGEN_RUNTIME_HEADERS}
    COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${_UFUNCGEN_PYTHONPATH}"
            "${Python_EXECUTABLE}" -m ufuncgen.gen runtime-headers
            "${_UFUNCGEN_GENERATED_INCLUDE_DIR}"
    # Unchanged headers are left alone by the generator; touching keeps make from rerunning.
    COMMAND "${CMAKE_COMMAND}" -E touch_nocreate ${_UFUNCGEN_RUNTIME_HEADERS}
    DEPENDS "${_UFUNCGEN_GEN_DIR}/runtime_headers.py" "${_UFUNCGEN_GEN_DIR}/element_types.py"
            "${_UFUNCGEN_GEN_DIR}/limits.py"
    COMMENT "ufuncgen: generating ufuncgen/element_types.h and ufuncgen/limits.h"
    VERBATIM)
  add_custom_target(ufuncgen_runtime_headers DEPENDS ${_UFUNCGEN_RUNTIME_HEADERS})
  list(APPEND _UFUNCGEN_INCLUDE_DIRS "${_UFUNCGEN_GENERATED_INCLUDE_DIR}")
endif()

# ufuncgen_use_headers(<target>): compile a target against ufuncgen's C headers (src/include
# and the generated ones, or an installed ufuncgen's include/).
function(ufuncgen_use_headers target)
  target_include_directories(${target} PRIVATE ${_UFUNCGEN_INCLUDE_DIRS})
  if(TARGET ufuncgen_runtime_headers)
    add_dependencies(${target} ufuncgen_runtime_headers)
  endif()
endfunction()

# A sanitized install's settings (UFUNCGEN_SANITIZE ON, UFUNCGEN_CUDA OFF); see below.
include("${CMAKE_CURRENT_LIST_DIR}/sanitize.cmake" OPTIONAL)

# CUDA is optional: used when a CUDA compiler is found, unless -DUFUNCGEN_CUDA=OFF.  Without it
# the modules still carry the simulator's kernels (UFUNCGEN_DEVICE=sim), compiled as C.
# Looking for nvcc costs seconds (CMake compiles a test project with it), most of a host-only
# build: skipped when the caller has already said UFUNCGEN_CUDA=OFF (--cuda-arch none).
if(NOT DEFINED UFUNCGEN_CUDA OR UFUNCGEN_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
endif()
if(CMAKE_CUDA_COMPILER)
  option(UFUNCGEN_CUDA "Compile the device kernels with nvcc" ON)
else()
  option(UFUNCGEN_CUDA "Compile the device kernels with nvcc" OFF)
endif()
set(UFUNCGEN_CUDA_ENABLED OFF)
if(UFUNCGEN_CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "UFUNCGEN_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)")
  endif()
  # Turing (sm_75, the oldest CUDA 13 supports) through Hopper (sm_90) as machine code, and
  # sm_90 PTX that newer GPUs compile when the module loads.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "75-real;80-real;86-real;89-real;90")
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(UFUNCGEN_CUDA_ENABLED ON)
  message(STATUS "ufuncgen: CUDA kernels for ${CMAKE_CUDA_ARCHITECTURES}")
else()
  message(STATUS "ufuncgen: no CUDA compiler (or UFUNCGEN_CUDA=OFF): device calls run only "
                 "under the simulator, UFUNCGEN_DEVICE=sim")
endif()

# Multi-core host loops (ufuncgen._core's thread pool); OFF compiles every loop single-threaded.
option(UFUNCGEN_THREADS "Let large host loops run on several threads" ON)

# AddressSanitizer + UndefinedBehaviorSanitizer for the C code (never the nvcc code: use with
# UFUNCGEN_CUDA=OFF).  A ufuncgen installed with it ON installs sanitize.cmake beside this file,
# so every `ufuncgen build` from that install is sanitized too; `ufuncgen build` also turns it
# on when the environment has UFUNCGEN_SANITIZE=1.  Running such modules needs libasan loaded
# first: tools/sanitize.sh shows how (LD_PRELOAD, ASAN_OPTIONS, suppressions).
option(UFUNCGEN_SANITIZE "Build the C code with -fsanitize=address,undefined" OFF)
set(UFUNCGEN_SANITIZE_FLAGS
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g1)
if(UFUNCGEN_SANITIZE)
  if(UFUNCGEN_CUDA_ENABLED)
    message(FATAL_ERROR "UFUNCGEN_SANITIZE=ON needs UFUNCGEN_CUDA=OFF (nvcc code is not sanitized)")
  endif()
  if(NOT CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "UFUNCGEN_SANITIZE=ON needs GCC or Clang")
  endif()
  message(STATUS "ufuncgen: C code built with ${UFUNCGEN_SANITIZE_FLAGS}")
endif()

# ufuncgen_sanitize(<target>): the sanitizer flags on a target's C code, when UFUNCGEN_SANITIZE.
function(ufuncgen_sanitize target)
  if(UFUNCGEN_SANITIZE)
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:C>:${UFUNCGEN_SANITIZE_FLAGS}>")
    target_link_options(${target} PRIVATE ${UFUNCGEN_SANITIZE_FLAGS})
  endif()
endfunction()

# glibc's vector math library: the generated loops call its SIMD exp, sin, ... when present.
find_library(UFUNCGEN_LIBMVEC NAMES mvec)

# The signature files' full paths, as the kernels' #line directives name them for nvcc
# (kernels.cu.j2): nvcc lists those files in its dependency file, and a relative name, which
# make looks for in the build folder, would be out of date at every build.  Written only when
# its text changes, so that the kernels are not compiled again for it.
function(_ufuncgen_write_source_files header)
  set(text "/* Written by ufuncgen.cmake: the full paths of the module's signature files. */\n")
  set(index 0)
  foreach(file IN LISTS ARGN)
    string(REPLACE "\\" "\\\\" file "${file}")
    string(REPLACE "\"" "\\\"" file "${file}")
    string(APPEND text "#define UFG_SOURCE_FILE_${index} \"${file}\"\n")
    math(EXPR index "${index} + 1")
  endforeach()
  set(old "")
  if(EXISTS "${header}")
    file(READ "${header}" old)
  endif()
  if(NOT old STREQUAL text)
    file(WRITE "${header}" "${text}")
  endif()
endfunction()

# ufuncgen_add_module(<target> MODULE <qualified.name> SIGNATURES <file>...
#                     [SOURCE_ROOT <dir>] [OUTPUT_DIRECTORY <dir>])
# Sets the target property UFUNCGEN_STUB to the generated .pyi file.
function(ufuncgen_add_module target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "MODULE;SOURCE_ROOT;OUTPUT_DIRECTORY" "SIGNATURES")
  if(NOT ARG_MODULE OR NOT ARG_SIGNATURES)
    message(FATAL_ERROR "ufuncgen_add_module(${target}): MODULE and SIGNATURES are required")
  endif()
  if(NOT ARG_SOURCE_ROOT)
    set(ARG_SOURCE_ROOT "${CMAKE_CURRENT_SOURCE_DIR}")
  endif()
  string(REGEX REPLACE ".*\\." "" short_name "${ARG_MODULE}")
  set(signatures "")
  foreach(file IN LISTS ARG_SIGNATURES)
    get_filename_component(file "${file}" ABSOLUTE)
    list(APPEND signatures "${file}")
  endforeach()

  set(gen_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}_generated")
  set(module_c "${gen_dir}/${short_name}_module.c")
  set(stub "${gen_dir}/${short_name}.pyi")
  # The bodies, written once, are shared by the host loops and the kernels; the kernels are
  # compiled by the host compiler for the simulator (kernels_sim.c includes kernels.cu) and by
  # nvcc when CUDA is on.
  set(bodies_h "${gen_dir}/${short_name}_bodies.h")
  # The kernels of functions that opt in to fast math are in a file of their own
  # (kernels_fastmath.cu), compiled by nvcc with --use_fast_math.
  set(kernels_cu "${gen_dir}/${short_name}_kernels.cu")
  set(kernels_sim_c "${gen_dir}/${short_name}_kernels_sim.c")
  set(kernels_fastmath_cu "${gen_dir}/${short_name}_kernels_fastmath.cu")
  set(kernels_fastmath_sim_c "${gen_dir}/${short_name}_kernels_fastmath_sim.c")
  set(generated "${module_c}" "${stub}" "${bodies_h}" "${kernels_cu}" "${kernels_sim_c}"
                "${kernels_fastmath_cu}" "${kernels_fastmath_sim_c}")
  # Generation follows content, not dates.  make and Ninja rerun a command when an input is
  # newer than its outputs, but an edited signature file can be older than the last build
  # (restored from a backup, `cp -p`, `rsync -t`, untarred), and the old code would be kept.
  # So every build first writes the SHA-256 of the signature files and the generator's files
  # to `inputs_digest`, rewritten only when that text changed (ufuncgen_inputs.cmake), and the
  # generator runs when the digest is newer than its stamp.  The generator rewrites only the
  # files whose text changed; they are the command's byproducts, not its outputs, so that make
  # and Ninja recompile only those (nvcc keeps the kernels of an unchanged kernels.cu).
  set(inputs_digest "${gen_dir}/${short_name}_inputs.sha256")
  set(generated_stamp "${gen_dir}/${short_name}_generated.stamp")
  add_custom_target(${target}_ufuncgen_inputs
    COMMAND "${CMAKE_COMMAND}" "-DOUTPUT=${inputs_digest}"
            -P "${_UFUNCGEN_CMAKE_DIR}/ufuncgen_inputs.cmake"
            -- "${ARG_MODULE}" "${ARG_SOURCE_ROOT}" ${signatures} ${_UFUNCGEN_GENERATOR_FILES}
    BYPRODUCTS "${inputs_digest}"
    VERBATIM)
  add_custom_command(
    OUTPUT "${generated_stamp}"
    BYPRODUCTS ${generated}
    COMMAND "${CMAKE_COMMAND}" -E env "PYTHONPATH=${_UFUNCGEN_PYTHONPATH}"
            "${Python_EXECUTABLE}" -m ufuncgen.gen --module "${ARG_MODULE}" -o "${gen_dir}"
            --source-root "${ARG_SOURCE_ROOT}" ${signatures}
    COMMAND "${CMAKE_COMMAND}" -E touch "${generated_stamp}"
    DEPENDS "${inputs_digest}" ${signatures} ${_UFUNCGEN_GENERATOR_FILES}
    COMMENT "ufuncgen: generating ${ARG_MODULE} from ${ARG_SIGNATURES}"
    VERBATIM)
  add_custom_target(${target}_ufuncgen_sources DEPENDS "${generated_stamp}")
  add_dependencies(${target}_ufuncgen_sources ${target}_ufuncgen_inputs)
  set_source_files_properties(${generated} PROPERTIES GENERATED TRUE)

  Python_add_library(${target} MODULE WITH_SOABI "${module_c}" "${kernels_sim_c}"
                     "${kernels_fastmath_sim_c}")
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME "${short_name}"
    C_STANDARD 11
    C_VISIBILITY_PRESET hidden
    UFUNCGEN_STUB "${stub}")
  if(UFUNCGEN_CUDA_ENABLED)
    target_sources(${target} PRIVATE "${kernels_cu}" "${kernels_fastmath_cu}")
    # --fmad=false: a*b + c rounds twice, as in the host loops and in NumPy, so device and
    # host results agree.  A function that opts in to fast math gets nvcc's fast math
    # (approximate division, square root and transcendentals, denormals flushed, a*b + c
    # fused), as its host loops get GCC's.
    set_source_files_properties("${kernels_cu}" PROPERTIES LANGUAGE CUDA
                                COMPILE_OPTIONS "--fmad=false")
    set_source_files_properties("${kernels_fastmath_cu}" PROPERTIES LANGUAGE CUDA
                                COMPILE_OPTIONS "--use_fast_math")
    # The CUDA runtime linked statically: importing needs no CUDA installation, and a
    # machine with no driver or GPU gets a clear error at the first device call.
    set_target_properties(${target} PROPERTIES
      CUDA_VISIBILITY_PRESET hidden
      CUDA_RUNTIME_LIBRARY Static)
    target_compile_definitions(${target} PRIVATE UFG_HAVE_CUDA)
    _ufuncgen_write_source_files("${gen_dir}/${short_name}_source_files.h" ${signatures})
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-O3>)
    # nvcc's optimizer and ptxas on every CPU: a module's kernels are one file, and for many
    # functions mostly ptxas's time (the prelude corpus's 389 loops, one architecture: 126 s
    # on one core, 88 of them ptxas).  nvcc says the code is the same or nearly.
    if(CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 11.8)
      target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--split-compile=0>)
    endif()
  endif()
  add_dependencies(${target} ${target}_ufuncgen_sources)
  ufuncgen_use_headers(${target})
  target_link_libraries(${target} PRIVATE Python::NumPy)
  if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
    # -fopenmp-simd: honour `omp declare simd` (vector math) without OpenMP threads.
    # -fno-math-errno: math calls have no side effect, so loops calling them vectorize.
    # Fast math only where a function opts in (fastmath: true): otherwise NaN, Inf and -0.0
    # must come out as NumPy's own loops give them.
    # -ffp-contract=off: gnu11 would fuse `x*y + x` into one FMA in the x86-64-v3 clone only,
    # rounding once where NumPy (built as ISO C) rounds twice, so results (even overflow to
    # Inf) would differ from NumPy's and from one CPU to another.
    # -fwrapv: signed integer arithmetic wraps (two's complement), as NumPy's integer loops
    # give it, instead of being undefined behaviour that -O3 may assume never happens;
    # UBSan found add(int64) overflowing at INT64_MAX + 1 in the shipped examples.
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:C>:-O3;-fwrapv;-fopenmp-simd;-fno-math-errno;-ffp-contract=off;-Wall;-Wdouble-promotion;-Wfloat-conversion;-Wno-unknown-pragmas>")
    # -Wconversion (less its sign conversions) for one of its messages: a complex value
    # assigned to a real variable, which C converts by dropping the imaginary part and nvcc's
    # C++ refuses ("discards imaginary component"); build_diagnostics shows only that one of
    # its messages, at the user's line, and drops the others (int64 to int32, ...).
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:C>:-Wconversion;-Wno-sign-conversion>")
    # Errors, not warnings, for what C (before C23; GCC before 14) lets through but the
    # module could not survive, and nvcc's C++ refuses anyway:
    # -Werror=implicit-function-declaration: a call to an undeclared function (a typo,
    # `expp(x)`) would otherwise build and leave an undefined symbol, so that importing the
    # module fails (`ImportError: undefined symbol: expp`);
    # -Werror=incompatible-pointer-types, -Werror=int-conversion (and GCC's
    # -Werror=discarded-qualifiers; Clang counts it under incompatible-pointer-types): an
    # `int32_t *` passed for a helper's `T *`, an integer used as a pointer, a const input's
    # address written through, would silently reinterpret or overwrite memory;
    # -Werror=vla: an array sized at run time (`double tmp[n];`, a helper's `const T c[n]`),
    # which C99 allows and C++ (nvcc) does not.
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:C>:-Werror=implicit-function-declaration;-Werror=incompatible-pointer-types;-Werror=int-conversion;-Werror=vla>")
    # -fdiagnostics-column-unit=byte: GCC 11 and later count a column in display cells (tabs
    # widened to 8) when they can read the file a #line names, and in bytes when they cannot
    # (a relative path, from CMake's folder); Clang always counts bytes.  build_diagnostics
    # turns bytes into the characters ufuncgen's own messages count.
    if(CMAKE_C_COMPILER_ID STREQUAL "GNU" AND CMAKE_C_COMPILER_VERSION VERSION_GREATER_EQUAL 11)
      target_compile_options(${target} PRIVATE
        "$<$<COMPILE_LANGUAGE:C>:-fdiagnostics-column-unit=byte>")
    endif()
    # -fcx-fortran-rules: a complex product is NumPy's plain formula and a quotient Smith's,
    # without C99 Annex G's recovery of infinities (ufuncgen/complex.h; the CUDA class computes
    # the same).  A compiler without it keeps Annex G (README, "Complex numbers").
    include(CheckCCompilerFlag)
    check_c_compiler_flag(-fcx-fortran-rules UFUNCGEN_HAVE_CX_FORTRAN_RULES)
    if(UFUNCGEN_HAVE_CX_FORTRAN_RULES)
      target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:C>:-fcx-fortran-rules>")
    endif()
    if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
      # Bodies with data-dependent loops (benchmarks/host.py, "Scalar bodies") run as scalar
      # code, where a branch on a data bit mispredicts half the time; Numba's LLVM emits
      # conditional moves there.  -fno-split-paths: -O3's path splitting copies the join of
      # an if/else inside a loop into both arms, turning the select of a Collatz step
      # (`v = v & 1 ? 3 * v + 1 : v / 2`) into such a branch (1.33x slower than -O2).  The
      # if-conversion cost limit: GCC's default keeps `if (e & 1) r *= b` (power by squaring)
      # a branch; at 40 it becomes imul + cmov, 2.3x faster.  Neither touches vector loops,
      # and if-conversion never speculates a floating-point operation that may trap.
      target_compile_options(${target} PRIVATE
        "$<$<COMPILE_LANGUAGE:C>:-fno-split-paths;--param=max-rtl-if-conversion-unpredictable-cost=40>")
      # A const pointer passed where a writable one is expected (see above).
      target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:C>:-Werror=discarded-qualifiers>")
      # A goto that jumps forward past an initialised declaration (`goto done;` ... `T t =
      # sqrt(x);` ... `done:;`), or a switch whose case label does: C allows it, C++ (nvcc)
      # refuses it ("transfer of control bypasses initialization").  C-only in GCC.
      target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:C>:-Werror=jump-misses-init>")
    endif()
  endif()
  ufuncgen_sanitize(${target})
  if(NOT UFUNCGEN_THREADS)
    target_compile_definitions(${target} PRIVATE UFG_NO_THREADS)
  endif()
  if(UFUNCGEN_LIBMVEC)
    target_link_libraries(${target} PRIVATE "${UFUNCGEN_LIBMVEC}")
  else()
    target_compile_definitions(${target} PRIVATE UFG_NO_LIBMVEC)
  endif()
  if(ARG_OUTPUT_DIRECTORY)
    set(output_dir "${ARG_OUTPUT_DIRECTORY}")
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND "${CMAKE_COMMAND}" -E copy_if_different "${stub}" "${ARG_OUTPUT_DIRECTORY}"
      VERBATIM)
  else()
    # A folder of the target's own: two modules of one last name (pkg.a._ufuncs and
    # pkg.b._ufuncs) were built into one file, and the last one built was installed twice.
    set(output_dir "${CMAKE_CURRENT_BINARY_DIR}/${target}_module")
  endif()
  # $<1:...>: this one folder under a multi-config generator too ("Ninja Multi-Config" would
  # add a folder per configuration).
  set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "$<1:${output_dir}>")
endfunction()
