"""Rendering: the model → the generated C module and .pyi stub, and writing them."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ufuncgen.gen import generate, load_module
from ufuncgen.gen.render import render_module, write_outputs
from ufuncgen.gen.render import c_string, special_kernel

EXAMPLES = Path(__file__).resolve().parents[2] / "signatures" / "examples.ufunc"
COMMAND = "python -m ufuncgen.gen --module pkg.ex -o OUTDIR examples.ufunc"
_LINE = re.compile(r'#line (\d+) "([^"]+)"')
_SOURCE_FILE_MACRO = re.compile(r'#define (UFG_SOURCE_FILE_\d+) ("[^"]*")\n')


def _file_names_spelt_out(bodies: str) -> str:
    """The bodies header with each #line directive's file macro replaced by the name the
    header defines it as (the CUDA kernels define the full paths first)."""
    for macro, name in _SOURCE_FILE_MACRO.findall(bodies):
        bodies = re.sub(rf"^(#line \d+) {macro}$", rf"\1 {name}", bodies, flags=re.MULTILINE)
    return bodies


@pytest.fixture(scope="module")
def examples() -> dict[str, str]:
    module = load_module("pkg.ex", [str(EXAMPLES)], source_root=str(EXAMPLES.parent))
    return render_module(module, COMMAND)


GENERATED = ["ex.pyi", "ex_bodies.h", "ex_kernels.cu", "ex_kernels_fastmath.cu",
             "ex_kernels_fastmath_sim.c", "ex_kernels_sim.c", "ex_module.c"]


def test_a_module_renders_to_host_loops_shared_bodies_device_kernels_and_a_stub(examples):
    assert sorted(examples) == GENERATED


def test_each_body_is_written_once_and_included_by_the_host_loops_and_the_kernels(examples):
    assert examples["ex_module.c"].count('#include "ex_bodies.h"') == 1
    assert examples["ex_kernels.cu"].count('#include "ex_bodies.h"') == 1
    assert examples["ex_kernels_sim.c"].rstrip().endswith('#include "ex_kernels.cu"')
    for name in ("ex_module.c", "ex_kernels.cu"):
        assert "ufg_body_add_float64(" in examples[name]
        assert "UFG_BODY_FN void\nufg_body_add_float64(" not in examples[name]
    assert examples["ex_bodies.h"].count("UFG_BODY_FN void\nufg_body_add_float64(") == 1



def _host_at_loop(examples, cname):
    module = examples["ex_module.c"]
    start = module.index(f"ufg_host_at_{cname}(int a_type")
    return module[start:module.index("\n}\n", start)]


def test_the_indexed_loop_of_a_wider_type_converts_a_narrower_array_inline(examples):
    # host_at.c's .at of a float32 array with a Python float runs add's float64 loop, which
    # converts each element in its own loop; a type it does not list it answers -1 for.
    wide = _host_at_loop(examples, "add_float64")
    for narrow in ("float32", "float16"):
        assert f"case NPY_{narrow.upper()}:" in wide
        assert f"ufg_body_add_float64(ufg_at_float64_from_{narrow}(*element)" in wide
        assert f"*element = ufg_at_{narrow}_from_float64(result);" in wide
    assert "default:\n        return -1;" in wide
    integers = _host_at_loop(examples, "add_int64")
    for narrow in ("int8", "uint8", "int16", "uint16", "int32", "uint32"):
        assert f"ufg_at_int64_from_{narrow}(*element)" in integers
    assert "ufg_at_" not in _host_at_loop(examples, "add_float16")    # nothing narrower


def test_a_real_loop_calling_exp_or_log_gets_a_kernel_for_special_arguments_a_complex_one_not(
        tmp_path):
    source = tmp_path / "sp.ufunc"
    source.write_text(textwrap.dedent("""\
        ufunc exp_of(x) -> y
            types: float32(float32), complex128(complex128), float16(float16)
        {
            y = exp(x);
        }

        ufunc log_exp(x) -> y
            types: float64(float64)
        {
            y = log(x) + exp(x);
        }
        """))
    files = render_module(load_module("pkg.sp", [str(source)], source_root=str(tmp_path)),
                          COMMAND)
    module, bodies = files["sp_module.c"], files["sp_bodies.h"]
    assert ("{ufg_scalar_kernel_exp_of_float32, false, ufg_kernel_exp_of_float32_special, "
            "UFG_FP_UNDERFLOW}" in module)
    assert "ufg_body_exp_of_float32_special(ufg_arg_x[i], &ufg_arg_y[i]);" in module
    assert ("{ufg_scalar_kernel_log_exp_float64, false, ufg_kernel_log_exp_float64_special, "
            "UFG_FP_UNDERFLOW | UFG_FP_DIVIDE}" in module)
    assert bodies.count("#define UFG_BODY_FLAVOUR _special") == 2
    for other in ("complex128", "float16"):     # exp of a complex: the prelude's; float16 blocks
        assert f"ufg_kernel_exp_of_{other}_special" not in module
        assert f"{{ufg_scalar_kernel_exp_of_{other}, false, NULL, 0}}" in module


def test_elementwise_loops_without_vector_math_get_a_copy_up_to_avx2_for_large_calls(examples):
    module = examples["ex_module.c"]
    assert "UFG_TARGET_CLONES_UP_TO_AVX2 static void\nufg_kernel_add_float32_stream(" in module
    assert ("ufg_kernel_for_call(ufg_kernel_add_float32, ufg_kernel_add_float32_stream, "
            "dimensions[0], 12)" in module)
    # libmvec's 512-bit variants pay in every call; complex loops have their own clones
    assert "ufg_kernel_gaussian_pdf_float32_stream" not in module
    assert "ufg_kernel_for_call(ufg_kernel_gaussian_pdf_float32, NULL, " in module
    assert not re.search(r"ufg_kernel_\w*complex\w*_stream", module)


def _rendered(tmp_path, name, text):
    """The generated module C of signature text `text` (a module pkg.<name>)."""
    source = tmp_path / f"{name}.ufunc"
    source.write_text(text)
    return render_module(load_module(f"pkg.{name}", [str(source)], source_root=str(tmp_path)),
                         COMMAND)[f"{name}_module.c"]


def _has_stream_copy(module, cname):
    """Whether loop `cname` has its copy up to AVX2 for large calls, and passes it on (both
    say the same, or the test fails)."""
    passed = f"ufg_kernel_for_call(ufg_kernel_{cname}, ufg_kernel_{cname}_stream, " in module
    assert passed or f"ufg_kernel_for_call(ufg_kernel_{cname}, NULL, " in module, cname
    assert passed == (f"ufg_kernel_{cname}_stream(npy_intp n" in module), cname
    return passed


def test_a_complex_loop_calling_a_function_keeps_its_widest_clone_for_large_calls(tmp_path):
    # |z| over 1M complex64 values: 0.43 ns an element in the AVX2 copy, 0.29 in AVX-512
    # (np.abs 0.33); a real loop of the same file still gets the copy, and so does a complex
    # sum, a stream like a float one.
    module = _rendered(tmp_path, "mag", textwrap.dedent("""\
        ufunc magnitude(z) -> r
            types: float32(complex64), float64(complex128), float32(float32)
        {
            r = abs(z);
        }

        ufunc total(x, y) -> r
            types: complex128(complex128, complex128)
        {
            r = x + y;
        }
        """))
    assert not _has_stream_copy(module, "magnitude_complex64__float32")
    assert not _has_stream_copy(module, "magnitude_complex128__float64")
    assert _has_stream_copy(module, "magnitude_float32")
    assert _has_stream_copy(module, "total_complex128")


def test_a_loop_with_a_conditional_keeps_its_widest_clone_for_large_calls(tmp_path):
    # GCC's AVX2 code cannot mask the multiply of `x < y ? x * y : y` (its flags), so it left
    # the copy scalar and branchy: 48 ms over 10M float32 where AVX-512 takes 3.7.
    module = _rendered(tmp_path, "cond", textwrap.dedent("""\
        ufunc clipmul(x, y) -> r
            types: float32(float32, float32)
        {
            r = x < y ? x * y : y;
        }

        ufunc relu(x) -> y
            types: float32(float32)
        {
            if (x > 0)
                y = x;
            else
                y = 0;
        }
        """))
    assert not _has_stream_copy(module, "clipmul_float32")
    assert not _has_stream_copy(module, "relu_float32")


def test_a_loop_of_64_bit_integers_that_multiplies_values_keeps_its_widest_clone(tmp_path):
    # AVX2 has no 64-bit multiply: a cubic over 2M int64 took 0.94 ms in the AVX2 copy, 0.63
    # in AVX-512.  A product by a number written in the body (shifts and adds) keeps the copy,
    # as do narrower integers and floats.
    text = textwrap.dedent("""\
        ufunc cubic(x) -> y
            types: int64(int64), uint64(uint64), int32(int32), float64(float64)
        {
            y = ((x * (T)3 + (T)2) * x - (T)7) * x + (T)1;
        }

        ufunc axpy(x, y) -> r
            types: int64(int64, int64)
        {
            r = (T)3 * x + y * 2;
        }

        ufunc scale(x, y) -> r
            types: int64(int64, int64)
        {
            r = x;
            r *= y;
        }
        """)
    # Products found however the body spells them (a constant first, a unary operator on the
    # right), and casts and constants in parentheses not taken for calls or values.
    bodies = {
        "constant_first": ("r = 3*x*y + 5*x*x + 7*y*y;", True),
        "constant_last": ("r = x*y*3 + x*x*5 + y*y*7;", True),
        "negated": ("r = x * -y;", True),
        "complemented": ("r = x * ~y;", True),
        "through_callee": ("r = (abs)(x) * 2;", True),
        "cast_sum": ("r = (T)(x + y);", False),
        "cast_constant": ("r = x * (T)(3) + (int64_t)(y) * -5;", False),
        "parenthesized_sum": ("r = (x + 1) * 2;", False),
    }
    module = _rendered(tmp_path, "i64", text + "".join(
        f"\nufunc {name}(x, y) -> r\n    types: int64(int64, int64)\n{{\n    {code}\n}}\n"
        for name, (code, _) in bodies.items()))
    copies = {"cubic_int64": False, "cubic_uint64": False, "scale_int64": False,
              "cubic_int32": True, "cubic_float64": True, "axpy_int64": True}
    copies.update({f"{name}_int64": not multiplies for name, (_, multiplies) in bodies.items()})
    for cname, copied in copies.items():
        assert _has_stream_copy(module, cname) == copied, cname


def test_cub_is_included_only_where_an_associative_function_reduces_whole_lines(examples):
    # add (associative, with reductions) is in the exact file; the fast-math file has none
    kernels, fast = examples["ex_kernels.cu"], examples["ex_kernels_fastmath.cu"]
    assert "#include <cub/device/device_scan.cuh>" in kernels
    assert "UFG_LAUNCHER(total_add_float32)" in kernels
    assert "UFG_LAUNCHER(scan_add_float32)" in kernels
    assert "cub/" not in fast
    # a function not declared associative gets neither launcher
    assert "UFG_LAUNCHER(scan_custom_op" not in kernels
    assert "UFG_LAUNCHER(total_custom_op" not in kernels


def test_an_associative_float16_loop_reduces_in_float_on_the_device_with_no_cub_total(examples):
    kernels, module_c = examples["ex_kernels.cu"], examples["ex_module.c"]
    # CUB's total would round every step to float16; its scan, whose every step is an output
    # element, stays
    assert "UFG_LAUNCHER(total_add_float16)" not in kernels
    assert "UFG_LAUNCHER(scan_add_float16)" in kernels
    assert "ufg_launch_sim_total_add_float16" not in module_c
    reduce_kernel = kernels.split("ufg_reduce_kernel_add_float16(const ufg_reduce_params p)")[1]
    reduce_kernel = reduce_kernel.split("UFG_DEFINE_LAUNCHER")[0]
    assert "float acc = ufg_half_to_float(" in reduce_kernel
    assert "ufg_reduce_wide_step_add_float16(&acc, x0);" in reduce_kernel
    # a split reduction's partial results stay floats; only a result is stored as float16
    assert "ufg_reduce_write_add_float16(out + chunk * p.out_chunk_stride, acc, p.partials_out);" in reduce_kernel
    write = kernels.split("ufg_reduce_write_add_float16(char *y, float acc, int32_t partial)")[1]
    assert "*(float *)y = acc;" in write and "= ufg_float_to_half(acc);" in write.split("}\n\n")[0]
    assert "{ufg_launch_sim_at_add_float16, UFG_CUDA_LAUNCHER(at_add_float16)},\n        1," in module_c
    reduceat_kernel = kernels.split("ufg_reduceat_kernel_add_float16(const ufg_reduce_params p)")[1]
    assert "ufg_reduce_wide_step_add_float16(&acc," in reduceat_kernel.split("UFG_DEFINE_LAUNCHER")[0]
    # the scan rounds every step; so do every loop's kernels of a function not associative
    accumulate_kernel = kernels.split("ufg_accumulate_kernel_add_float16(const ufg_reduce_params p)")[1]
    assert "ufg_reduce_wide_step" not in accumulate_kernel.split("UFG_DEFINE_LAUNCHER")[0]
    assert "ufg_reduce_wide_step_add_float32" not in kernels


def test_kernels_of_functions_that_opt_in_to_fast_math_are_in_a_file_of_their_own(
        tmp_path, fastmath_signatures):
    source = tmp_path / "fm.ufunc"
    source.write_text(fastmath_signatures)
    files = render_module(load_module("pkg.fm", [str(source)], source_root=str(tmp_path)),
                          COMMAND)
    fast, exact = files["fm_kernels_fastmath.cu"], files["fm_kernels.cu"]
    assert "ufg_kernel_ratio_fast_float32(" in fast and "ufg_kernel_ratio_fast" not in exact
    assert "ufg_kernel_ratio_exact_float32(" in exact and "ufg_kernel_ratio_exact" not in fast
    # the simulator's build compiles the fast ones as the host loops do: under GCC's fast math
    assert fast.count("UFG_FASTMATH_BEGIN\n") == fast.count("UFG_FASTMATH_END\n") == 2
    assert "UFG_FASTMATH_BEGIN\n" not in exact
    assert files["fm_kernels_fastmath_sim.c"].rstrip().endswith('#include "fm_kernels_fastmath.cu"')
    assert "the functions that opt in to fast math" in fast.split("*/")[0]


def test_a_helper_is_compiled_only_for_the_types_whose_bodies_call_it(examples):
    helpers = examples["ex_bodies.h"].split("helpers, per T that uses them")[1].split("---- add:")[0]
    assert "#define polar_to_cartesian polar_to_cartesian__float64" in helpers
    assert "#define polar_to_cartesian polar_to_cartesian__float32" in helpers
    assert "__int64" not in helpers     # cos(int64) would not even compile on the device


def test_binary_functions_get_device_reduce_kernels_with_an_identity_or_without(examples):
    kernels = examples["ex_kernels.cu"]
    assert "UFG_LAUNCHER(reduce_add_float64)" in kernels
    assert "UFG_LAUNCHER(reduce_hypot_float32)" in kernels          # no identity
    assert "UFG_LAUNCHER(reduce_custom_op_float64)" in kernels
    assert "UFG_LAUNCHER(reduce_lucas" not in kernels               # one input
    assert "UFG_LAUNCHER(reduce_inner1d" not in kernels             # a gufunc
    # .accumulate's scan: for the same loops as .reduce, declared and listed in the descriptor
    assert "UFG_LAUNCHER(accumulate_add_float64)" in kernels
    assert "UFG_LAUNCHER(accumulate_hypot_float32)" in kernels
    assert "UFG_LAUNCHER(accumulate_lucas" not in kernels
    module = examples["ex_module.c"]
    assert "{ufg_launch_sim_accumulate_add_float64, UFG_CUDA_LAUNCHER(accumulate_add_float64)}" in module
    # .reduceat's segments: the same loops again
    assert "UFG_LAUNCHER(reduceat_add_float64)" in kernels
    assert "UFG_LAUNCHER(reduceat_lucas" not in kernels
    assert "{ufg_launch_sim_reduceat_add_float64, UFG_CUDA_LAUNCHER(reduceat_add_float64)}" in module


def test_every_loop_of_a_unary_or_binary_function_of_one_output_gets_an_at_kernel(examples):
    kernels, module = examples["ex_kernels.cu"], examples["ex_module.c"]
    for loop in ("add_float64", "add_float16", "custom_op_float64", "lucas_int64",
                 "gelu_float32", "mandelbrot_complex64__int32"):
        assert f"UFG_LAUNCHER(at_{loop})" in kernels
        assert f"{{ufg_launch_sim_at_{loop}, UFG_CUDA_LAUNCHER(at_{loop})}}" in module
    for name in ("inner1d", "sincos", "gaussian_pdf"):     # a gufunc, two outputs, three inputs
        assert f"UFG_LAUNCHER(at_{name}" not in kernels
    # a's element is read and written through the loop's types by the cast kernel's switch
    assert '#include "ufuncgen/cast_element.h"' in kernels
    assert "ufg_cast_element(p.at_load_pair, element, (char *)x.bytes);" in kernels


def test_binary_loops_of_one_type_get_host_reductions_reorderable_where_associative(examples):
    module_c = examples["ex_module.c"]
    # add: 4 loops; custom_op (float64) and hypot (float32, float64), in NumPy's order only
    assert module_c.count('#include "ufuncgen/host_reduce_impl.h"') == 7
    assert "#define UFG_REDUCE_BODY ufg_body_add_float32" in module_c
    # float16 steps in float, read and rounded through the prelude's conversions
    half = module_c.split("#define UFG_REDUCE_BODY ufg_body_add_float16")[0].rsplit("#define UFG_REDUCE_T", 1)[1]
    assert half.split() == ["float", "#define", "UFG_REDUCE_STORAGE", "ufg_half", "#define", "UFG_REDUCE_LOAD",
                            "ufg_half_to_float", "#define", "UFG_REDUCE_STORE", "ufg_float_to_half",
                            "#define", "UFG_REDUCE_LOAD_BLOCK", "ufg_halves_to_floats",
                            "#define", "UFG_REDUCE_LOAD_F16C", "ufg_half_to_float_f16c",
                            "#define", "UFG_REDUCE_STORE_F16C", "ufg_float_to_half_f16c"]
    assert "UFG_REDUCE_STORAGE" not in module_c.split("#define UFG_REDUCE_BODY ufg_body_add_float32")[0].rsplit(
        "#define UFG_REDUCE_T", 1)[1]
    assert "&ufg_reduce_add_int64_ops," in module_c
    for loop in ("custom_op_float64", "hypot_float32", "hypot_float64"):
        block = module_c.split(f"#define UFG_REDUCE_NAME(part) ufg_reduce_{loop}##part")[0].rsplit("*/", 1)[1]
        assert "#define UFG_REDUCE_IN_ORDER_ONLY" in block and "UFG_REDUCE_CLONES" not in block
    add = module_c.split("#define UFG_REDUCE_NAME(part) ufg_reduce_add_float32##part")[0].rsplit("*/", 1)[1]
    assert "UFG_REDUCE_IN_ORDER_ONLY" not in add
    # an integer type's lanes do not follow its size (host_reduce_impl.h)
    int64 = module_c.split("#define UFG_REDUCE_NAME(part) ufg_reduce_add_int64##part")[0].rsplit("*/", 1)[1]
    assert "#define UFG_REDUCE_INTEGER" in int64 and "UFG_REDUCE_INTEGER" not in add
    hypot_loop = module_c.split("ufg_loop_hypot_float64(")[1].split("\n}")[0]
    assert hypot_loop.rstrip().endswith("NULL, ufg_scalar_kernel_hypot_float64, ufg_broadcast_kernels_hypot_float64, "
                                        "NULL, &ufg_reduce_hypot_float64_ops, true, true);")
    # neither a unary function nor one of three inputs has one
    assert "ufg_reduce_gelu" not in module_c and "ufg_reduce_gaussian_pdf" not in module_c


def test_the_scalar_code_of_hypots_loops_calls_a_copy_of_its_body_with_the_preludes_scalar_variant(examples):
    module_c, bodies = examples["ex_module.c"], examples["ex_bodies.h"]
    for loop in ("hypot_float32", "hypot_float64", "polar_distance_float32", "polar_distance_float64"):
        copy = bodies.split(f"ufg_body_{loop}_scalar(")[0].rsplit("#ifdef UFUNCGEN_HOST_LOOPS_H", 1)[1]
        assert copy.split("*/", 1)[1].split() == ["#undef", "UFG_BODY_FLAVOUR", "#define", "UFG_BODY_FLAVOUR",
                                                   "_scalar", "UFG_BODY_FN", "void"]
        after = bodies.split(f"ufg_body_{loop}_scalar(")[1].split("#endif", 1)[0]
        assert after.rstrip().endswith("#undef UFG_BODY_FLAVOUR\n#define UFG_BODY_FLAVOUR")
        scalar_kernel = module_c.split(f"ufg_scalar_kernel_{loop}(npy_intp n, char **args)")[1].split("\n}")[0]
        assert f"ufg_body_{loop}_scalar(" in scalar_kernel
        vector_kernel = module_c.split(f"ufg_kernel_{loop}(npy_intp n, char **args)")[1].split("\n}")[0]
        assert f"ufg_body_{loop}(" in vector_kernel and "_scalar(" not in vector_kernel
    for loop in ("hypot_float32", "hypot_float64"):
        block = module_c.split(f"#define UFG_REDUCE_NAME(part) ufg_reduce_{loop}##part")[0].rsplit("*/", 1)[1]
        assert f"#define UFG_REDUCE_SCALAR_BODY ufg_body_{loop}_scalar" in block
    # add calls nothing with a variant
    assert "UFG_REDUCE_SCALAR_BODY" not in module_c.split("#define UFG_REDUCE_NAME(part) ufg_reduce_add_float32##part")[0].rsplit("*/", 1)[1]
    assert bodies.count("_scalar(") == 4


def test_a_loop_whose_scalar_copy_gives_its_bits_runs_a_call_of_one_element_there(examples):
    module_c = examples["ex_module.c"]
    for cname, exact, one in (("add_float32", "NULL", "ufg_scalar_kernel_add_float32"),
                              ("hypot_float64", "NULL", "ufg_scalar_kernel_hypot_float64"),
                              ("gaussian_pdf_float64", "&ufg_rerun_gaussian_pdf_float64", "NULL"),
                              ("add_float16", "NULL", "NULL")):
        # the arguments after the kernel's, ufg_kernel_for_call(ufg_kernel_<cname>, ...)
        after = module_c.split(f"ufg_kernel_for_call(ufg_kernel_{cname}, ")[-1].split("), ", 1)[1]
        call = after.split(")")[0].split(", ")
        assert call[:2] == [exact, one], cname
    assert "ufg_scalar_kernel_add_float16(" not in module_c


def test_a_gufunc_loop_picks_a_contiguous_specialization_with_constant_frozen_strides(examples):
    module_c = examples["ex_module.c"]
    steps = module_c.split("ufg_contiguous_steps_rgb_to_gray_float64(npy_intp const *dimensions, npy_intp *steps)")[1]
    assert steps.split("}")[0].split("\n")[3:6] == ["    steps[0] = 8 * 3;", "    steps[1] = 8;", "    steps[2] = 8;"]
    matmul = module_c.split("ufg_contiguous_steps_matmul_float32(npy_intp const *dimensions, npy_intp *steps)")[1]
    assert "steps[3] = 4 * dimensions[2];" in matmul.split("}")[0]       # a(i, k): row of n
    # The core steps (3 to 9) decide between the general loop and the contiguous ones, the
    # outer steps (0 to 3) between the contiguous loop and the contiguous-cores one.
    loop = module_c.split("ufg_loop_matmul_float32(")[1].split("\n}")[0]
    assert "ufg_gufunc_range ufg_range = ufg_range_matmul_float32;" in loop
    assert ("if (!ufg_rows_meet && ufg_same_steps(steps, ufg_steps, ufg_step_walks_matmul, dimensions, "
            "3, 9)) {") in loop
    assert ("ufg_range = ufg_same_steps(steps, ufg_steps, ufg_step_walks_matmul, dimensions, 0, 3)\n"
            "                    ? ufg_range_contiguous_matmul_float32 : "
            "ufg_range_contiguous_cores_matmul_float32;") in loop
    for copy, outer_from_call in (("contiguous", "false"), ("contiguous_cores", "true")):
        body = module_c.split(f"ufg_range_{copy}_matmul_float32(char")[1].split("\n}")[0]
        assert (f"ufg_range_cores_matmul_float32(args, dimensions, steps, ufg_begin, ufg_end, "
                f"{outer_from_call});") in body
    # Steps: a, b and out's outer ones along dimensions[0], then a's along m (1) and n (2),
    # b's along n and p (3), out's along m and p; rgb_to_gray's core (3) is dimensions[1].
    assert "ufg_step_walks_matmul[] = {0, 0, 0, 1, 2, 2, 3, 1, 3};" in module_c
    assert "ufg_step_walks_rgb_to_gray[] = {0, 0, 1};" in module_c


def test_a_specialized_gufunc_tests_its_sizes_first_and_passes_them_as_constants(examples):
    module_c = examples["ex_module.c"]
    loop = module_c.split("ufg_range_cores_matmul_float64(")[1].split("\n}")[0]
    tests = re.findall(r"if \((.*)\) \{   /\* specialize: (.*) \*/", loop)
    assert tests == [(" && ".join(f"dimensions[{i}] == {k}" for i in (1, 2, 3)), f"m={k}, n={k}, p={k}")
                     for k in (2, 3, 4, 8, 16)]
    assert "const npy_intp ufg_dimensions[4] = {dimensions[0], 4, 4, 4};" in loop
    # Each size, specialized or not, takes the call's outer steps in the contiguous-cores copy.
    assert loop.count("ufg_take_outer_steps(ufg_steps, steps, ufg_outer_from_call ? 3 : 0);") == 6
    # The general contiguous loop comes last, for every other size.
    assert loop.rstrip().endswith("ufg_range_prefetched_matmul_float64(args, dimensions, ufg_steps, ufg_begin, ufg_end);")
    unspecialized = module_c.split("ufg_range_cores_inner1d_float64(")[1].split("\n}")[0]
    assert "specialize" not in unspecialized



def _lane_cases(module_c: str, loop: str) -> list[int]:
    """The core sizes whose rows ufg_range_cores_<loop> runs in lanes (its switch's cases)."""
    cores = module_c.split(f"ufg_range_cores_{loop}(")[1].split("\n}")[0]
    return [int(k) for k in re.findall(r"case (\d+): \{", cores)]


def test_float_gufuncs_run_short_rows_in_lanes_for_each_size_they_do_not_specialize(examples):
    module_c = examples["ex_module.c"]
    # l2_norm's `specialize: n=2`, `n=3`, `n=4` keep their own loop; inner1d specializes none.
    for t in ("float32", "float64"):
        assert _lane_cases(module_c, f"l2_norm_{t}") == list(range(5, 17)), t
        assert _lane_cases(module_c, f"inner1d_{t}") == list(range(2, 17)), t
    assert "enum { ufg_lanes = UFG_LANE_BYTES / 8 };" in module_c.split(
        "ufg_range_lanes_inner1d_float64(char")[1].split("\n}")[0]
    # Not float16 (widened a block at a time), nor outputs with core dimensions (matmul,
    # centroid_distances), nor frozen cores (constant sizes already).
    for loop in ("l2_norm_float16", "inner1d_float16", "matmul_float32",
                 "centroid_distances_float32", "rgb_to_gray_float32"):
        assert _lane_cases(module_c, loop) == [], loop
        assert f"ufg_range_lanes_{loop}(" not in module_c, loop
    lanes = module_c.split("ufg_range_lanes_inner1d_float32(char")[1].split("\n}")[0]
    # A block holds UFG_LANE_BYTES of float32 rows, each input copied with its elements side
    # by side, the body's strides scaled to match; the rows left over take the general loop.
    assert "enum { ufg_lanes = UFG_LANE_BYTES / 4 };" in lanes
    for name in ("x", "y"):
        assert f"float ufg_lane_{name}[ufg_lanes * 16];" in lanes
        assert (f"ufg_lane_{name}[ufg_e * ufg_lanes + ufg_l] = "
                f"ufg_rows_{name}[ufg_l * ufg_elements_{name} + ufg_e];") in lanes
    assert "ufg_lane_steps[ufg_j] = steps[ufg_j] * ufg_lanes;" in lanes
    assert "#pragma omp simd" in lanes
    assert "ufg_prefetch_inputs(args, steps, 2, ufg_k0, ufg_prefetched);" in lanes
    assert lanes.rstrip().endswith(
        "ufg_range_body_inner1d_float32(args, dimensions, steps, ufg_k0, ufg_end);")
    # Only for a C-contiguous call: the contiguous-cores copy takes the call's outer steps.
    cores = module_c.split("ufg_range_cores_inner1d_float32(")[1].split("\n}")[0]
    assert "if (!ufg_outer_from_call) {\n        switch (dimensions[1]) {" in cores
    assert "const npy_intp ufg_dimensions[2] = {dimensions[0], 7};" in cores


LANES_EXCLUDED = """\
gufunc sum_exp(v) -> s
    layout: (n)->()
    types: float32(float32)
{
    s = 0;
    for (int64_t i = 0; i < n; i++) {
        s += exp(v(i));
    }
}

gufunc sum_positive(v) -> s
    layout: (n)->()
    types: float32(float32)
{
    s = 0;
    for (int64_t i = 0; i < n; i++) {
        if (v(i) > 0) {
            s += v(i);
        }
    }
}

gufunc fast_sum(v) -> s
    layout: (n)->()
    types: float32(float32)
    fastmath: true
{
    s = 0;
    for (int64_t i = 0; i < n; i++) {
        s += v(i);
    }
}

gufunc int_sum(v) -> s
    layout: (n)->()
    types: int32(int32)
{
    s = 0;
    for (int64_t i = 0; i < n; i++) {
        s += v(i);
    }
}

gufunc bilinear(x, a, y) -> s
    layout: (m),(m,n),(n)->()
    types: float32(float32, float32, float32)
{
    s = 0;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            s += x(i) * a(i, j) * y(j);
        }
    }
}

gufunc scaled_sum(v, c) -> s
    layout: (n),()->()
    types: float32(float32, float32)
{
    s = 0;
    for (int64_t i = 0; i < n; i++) {
        s += c * v(i);
    }
}
"""


def test_lanes_are_left_out_where_a_lane_could_differ_from_a_row_at_a_time(tmp_path):
    # Vector math (libmvec's bits), a conditional (its flags), fast math, a type other than
    # float32, two variable core dimensions: the loop as before.  A scalar input beside a core
    # one is read per row, in lanes too.
    source = tmp_path / "ln.ufunc"
    source.write_text(LANES_EXCLUDED)
    module_c = render_module(load_module("pkg.ln", [str(source)], source_root=str(tmp_path)),
                             COMMAND)["ln_module.c"]
    for loop in ("sum_exp_float32", "sum_positive_float32", "fast_sum_float32",
                 "int_sum_int32", "bilinear_float32"):
        assert _lane_cases(module_c, loop) == [], loop
    assert _lane_cases(module_c, "scaled_sum_float32") == list(range(2, 17))
    lanes = module_c.split("ufg_range_lanes_scaled_sum_float32(char")[1].split("\n}")[0]
    assert "ufg_lane_c" not in lanes
    assert "*(const float *)(args[1] + ufg_k * steps[1])" in lanes


def test_only_the_contiguous_gufunc_loop_prefetches_counting_its_inputs_and_core_dims(examples):
    # ufuncgen/prefetch.h decides per call from the inputs' steps and the core sizes; the
    # strided loop and the elementwise kernels never prefetch.
    module_c = examples["ex_module.c"]
    prefetched = module_c.split("ufg_range_prefetched_matmul_float64(char")[1].split("\n}")[0]
    assert ("ufg_prefetch_chunk(steps, 2, dimensions, 3, ufg_begin, ufg_end)" in prefetched)
    assert "ufg_prefetch_inputs(args, steps, 2, ufg_k0, ufg_k1)" in prefetched
    assert "ufg_range_body_matmul_float64(args, dimensions, steps, ufg_k0, ufg_k1)" in prefetched
    strided = module_c.split("ufg_range_matmul_float64(char")[1].split("\n}")[0]
    assert "prefetch" not in strided
    rgb = module_c.split("ufg_range_prefetched_rgb_to_gray_float32(char")[1].split("\n}")[0]
    assert "ufg_prefetch_chunk(steps, 1, dimensions, 1, ufg_begin, ufg_end)" in rgb
    elementwise = module_c.split("ufg_kernel_add_float32(")[1].split("\n}")[0]
    assert "prefetch" not in elementwise



def test_loops_of_two_or_more_inputs_get_a_kernel_per_input_that_reads_it_once(examples):
    # Where the scalar and the vector code give the same bits and no block is re-run for its
    # flags, each input has a kernel for calls that broadcast it alone (`x + 2.0`): its one
    # value read at [0], the other arguments at [i].
    module_c = examples["ex_module.c"]
    for cname in ("add_int64", "add_float32", "add_float64", "custom_op_float64", "hypot_float32"):
        table = module_c.split(f"ufg_broadcast_kernels_{cname}[] = {{ ")[1].split(" };")[0]
        assert table == f"ufg_kernel_{cname}_broadcast_x, ufg_kernel_{cname}_broadcast_y", cname
        loop = module_c.split(f"ufg_kernel_{cname}_broadcast_y(npy_intp n, char **args)")[1]
        assert "(ufg_arg_x[i], ufg_arg_y[0], &ufg_arg_" in loop.split("\n}")[0], cname
        strided = "NULL" if cname == "hypot_float32" else f"ufg_strided_kernel_{cname}"
        assert f"ufg_broadcast_kernels_{cname}, {strided}, &ufg_reduce_{cname}_ops" in module_c, cname
    # float16 (blocks), vector math or conditionals (flag-exact re-runs), one input: none.
    for cname in ("add_float16", "gaussian_pdf_float32", "polar_distance_float64", "gelu_float32",
                  "sincos_float64", "lucas_int64", "mandelbrot_complex64__int32"):
        assert f"ufg_kernel_{cname}_broadcast" not in module_c, cname
        loop = module_c.split(f"ufg_loop_{cname}(")[1].split("\n}")[0]
        assert f"ufg_broadcast_kernels_{cname}" not in loop, cname


def test_loops_of_cheap_bodies_get_a_kernel_over_the_calls_own_steps(examples, tmp_path):
    # A body of at most three operations and no call, whose scalar copy gives the vector
    # loop's bits (render.strided_kernel): its strided calls may run in place
    # (host_loops.h, ufg_in_place_pays).  A call (hypot), vector math, float16 blocks,
    # complex values or a data loop: none.
    module_c = examples["ex_module.c"]
    for cname in ("add_int64", "add_float32", "add_float64", "custom_op_float64"):
        loop = module_c.split(f"ufg_strided_kernel_{cname}(npy_intp n, char **args, "
                              "const npy_intp *steps)\n{")[1].split("\n}")[0]
        assert "UFG_STRIDED_LOOP" in loop and "ufg_arg_x += ufg_step_x;" in loop, cname
        assert f"ufg_body_{cname}(*(const " in loop, cname
        call = module_c.split(f"ufg_loop_{cname}(")[1].split("\n}")[0]
        assert f", ufg_strided_kernel_{cname}, " in call, cname
    for cname in ("add_float16", "hypot_float32", "gaussian_pdf_float32", "gelu_float32",
                  "sincos_float64", "lucas_int64", "mandelbrot_complex64__int32"):
        assert f"ufg_strided_kernel_{cname}" not in module_c, cname
    source = tmp_path / "ops.ufunc"
    source.write_text(textwrap.dedent("""\
        ufunc three(x, y) -> r
            types: float32(float32, float32)
        {
            r = y != 0 ? x / y : (T)0;    /* a guarded division: 3 - 1 * 2 */
        }

        ufunc four(x) -> y
            types: float32(float32)
        {
            y = ((T)0.1 * x + (T)1e-3) * x + (T)0.3;
        }

        ufunc called(x) -> y
            types: float32(float32)
        {
            y = fabs(x);
        }

        ufunc named(x) -> y
            types: float32(float32)
        {
            y = (exp)(x);               /* libmvec's, past the prelude's macro */
        }

        ufunc chosen(x) -> y
            types: float32(float32)
        {
            y = (x > 0 ? exp : expm1)(x);
        }

        ufunc unsigned_of_float(x) -> y
            types: uint32(float32), uint64(uint32)
        {
            y = x;
        }
        """))
    module = load_module("pkg.ops", [str(source)], source_root=str(tmp_path))
    ops = render_module(module, COMMAND)["ops_module.c"]
    assert "UFG_SCALAR_COPY static void\nufg_strided_kernel_three_float32(" in ops
    assert "ufg_strided_kernel_four_float32" not in ops
    assert "ufg_strided_kernel_called_float32" not in ops
    # a math function called through a parenthesized callee is vector math all the same
    assert {"named", "chosen"} <= module.vector_math_functions
    assert "ufg_strided_kernel_named_float32" not in ops
    # a float converted to an unsigned integer: scalar and vector code differ outside the range
    assert "ufg_loop_unsigned_of_float_float32__uint32(" in ops
    assert "ufg_strided_kernel_unsigned_of_float_float32__uint32" not in ops
    assert "ufg_scalar_kernel_unsigned_of_float_float32__uint32" not in ops
    assert "ufg_strided_kernel_unsigned_of_float_uint32__uint64(" in ops


def _runs_from_line(module_c, cname):
    """The last argument of the loop's ufg_run_elementwise call: from_line."""
    call = module_c.split(f"ufg_run_elementwise(args, dimensions[0], steps, ")[1:]
    mine = [c for c in call if f"ufg_kernel_{cname}," in c.split(")")[0]]
    assert len(mine) == 1, cname
    return mine[0].split(");")[0].rsplit(", ", 1)[1]


def test_loops_without_vector_math_start_their_vector_loop_at_the_outputs_cache_line(
        examples, tmp_path, fastmath_signatures):
    # The elements before the first output's next 64-byte boundary run apart (host_loops.h's
    # ufg_run_aligned), only where the scalar and the vector loop give the same bits: not with
    # vector math, float16 or bfloat16 blocks, complex values or fast math.  hypot is the
    # prelude's, inline and bit for bit the same vectorized or not.
    module_c = examples["ex_module.c"]
    for cname in ("add_float32", "custom_op_float64", "lucas_int64", "hypot_float32"):
        assert _runs_from_line(module_c, cname) == "true", cname
    for cname in ("gaussian_pdf_float64", "gelu_float32", "sincos_float64", "add_float16",
                  "mandelbrot_complex64__int32"):
        assert _runs_from_line(module_c, cname) == "false", cname
    # One copy of the kernel's loop: the split is the runtime's.
    assert "ufg_elements_to_cache_line" not in module_c
    source = tmp_path / "fm.ufunc"
    source.write_text(fastmath_signatures)
    fast = render_module(load_module("pkg.fm", [str(source)], source_root=str(tmp_path)),
                         COMMAND)["fm_module.c"]
    assert _runs_from_line(fast, "ratio_fast_float32") == "false"
    assert _runs_from_line(fast, "ratio_exact_float32") == "true"

def _clones_of(module_c, function):
    """The dispatch macro in front of `static void function(`."""
    return re.search(rf"(\w+) static void\n{function}\(", module_c).group(1)


@pytest.mark.parametrize("function, clones", [
    ("ufg_range_contiguous_l2_norm_float64", "UFG_TARGET_CLONES_UP_TO_AVX2"),
    ("ufg_range_matmul_float32", "UFG_TARGET_CLONES_UP_TO_AVX2"),
    ("ufg_range_contiguous_pairwise_distances_float64", "UFG_TARGET_CLONES_UP_TO_AVX2"),
    ("ufg_range_contiguous_rgb_to_gray_float64", "UFG_TARGET_CLONES_UP_TO_AVX2"),
    ("ufg_range_sq_norm3_float32", "UFG_TARGET_CLONES_UP_TO_AVX2"),
    ("ufg_kernel_add_float32", "UFG_TARGET_CLONES"),
    ("ufg_kernel_hypot_float64", "UFG_TARGET_CLONES"),
    ("ufg_kernel_mandelbrot_complex64__int32", "UFG_TARGET_CLONES_WITHOUT_FMA"),
])
def test_gufuncs_are_cloned_up_to_avx2_and_elementwise_loops_up_to_avx512(examples, function,
                                                                          clones):
    assert _clones_of(examples["ex_module.c"], function) == clones


VECTOR_MATH_CLONES = """\
gufunc frozen_exp(v) -> s
    layout: (3)->()
    types: float64(float64)
{
    s = exp(v(0)) + exp(v(1)) + exp(v(2));
}

gufunc variable_exp(v) -> s
    layout: (n)->()
    types: float64(float64)
{
    s = 0;
    for (int64_t i = 0; i < n; i++) {
        s += exp(v(i));
    }
}

ufunc plus(x, y) -> z
    types: float32(float32, float32)
    associative: true
{
    z = x + y;
}

ufunc log_sum_exp(x, y) -> z
    types: float64(float64, float64)
    associative: true
{
    z = log(exp(x) + exp(y));
}
"""


@pytest.fixture(scope="module")
def vector_math_module_c(tmp_path_factory):
    source = tmp_path_factory.mktemp("vm") / "vm.ufunc"
    source.write_text(VECTOR_MATH_CLONES)
    return render_module(load_module("pkg.vm", [str(source)], source_root=str(source.parent)),
                         COMMAND)["vm_module.c"]


@pytest.mark.parametrize("function, clones", [
    # A frozen core calling vector math vectorizes the outer loop through libmvec's 512-bit
    # variants; a variable one reduces in order over its core dimension.
    ("ufg_range_contiguous_frozen_exp_float64", "UFG_TARGET_CLONES"),
    ("ufg_range_contiguous_variable_exp_float64", "UFG_TARGET_CLONES_UP_TO_AVX2"),
    ("ufg_kernel_plus_float32", "UFG_TARGET_CLONES"),
    ("ufg_kernel_log_sum_exp_float64", "UFG_TARGET_CLONES"),
])
def test_only_loops_that_call_vector_math_keep_the_avx512_clone(vector_math_module_c, function,
                                                               clones):
    assert _clones_of(vector_math_module_c, function) == clones


@pytest.mark.parametrize("loop, clones", [
    ("plus_float32", "UFG_TARGET_CLONES_UP_TO_AVX2"),
    ("log_sum_exp_float64", "UFG_TARGET_CLONES"),
])
def test_reductions_that_call_no_vector_math_are_cloned_up_to_avx2(vector_math_module_c, loop,
                                                                   clones):
    defined = re.search(rf"#define UFG_REDUCE_NAME\(part\) ufg_reduce_{loop}##part\n"
                        rf"#define UFG_REDUCE_CLONES (\w+)\n", vector_math_module_c)
    assert defined.group(1) == clones


COMPLEX_CLONES = """\
helper T cube(T z)
{
    return z * z * z;
}

ufunc modulus(z) -> r
    types: float64(complex128)
{
    /* |z| * 1: no product of complex values, as this comment's star and slash say */
    r = abs(z);  // nor this one's: z * z
}

ufunc phase(z) -> w
    types: complex64(complex64)
{
    w = exp(z);
}

ufunc square(z) -> w
    types: complex64(complex64)
{
    w = z * z;
}

ufunc ratio_modulus(a, b) -> r
    types: float32(complex64, complex64)
{
    r = abs(a / b);
}

ufunc through_a_helper(z) -> w
    types: complex128(complex128)
{
    w = cube(z);
}

ufunc scaled(x) -> y
    types: float64(float64)
{
    y = 2 * x;
}
"""


@pytest.mark.parametrize("function, clones", [
    ("ufg_kernel_modulus_complex128__float64", "UFG_TARGET_CLONES"),
    ("ufg_kernel_phase_complex64", "UFG_TARGET_CLONES"),
    ("ufg_kernel_square_complex64", "UFG_TARGET_CLONES_WITHOUT_FMA"),
    ("ufg_kernel_ratio_modulus_complex64_complex64__float32", "UFG_TARGET_CLONES_WITHOUT_FMA"),
    ("ufg_kernel_through_a_helper_complex128", "UFG_TARGET_CLONES_WITHOUT_FMA"),
    ("ufg_kernel_scaled_float64", "UFG_TARGET_CLONES"),
])
def test_complex_loops_lose_the_fma_clone_only_where_they_multiply_or_divide(
        tmp_path, function, clones):
    source = tmp_path / "cx.ufunc"
    source.write_text(COMPLEX_CLONES)
    rendered = render_module(load_module("pkg.cx", [str(source)], source_root=str(tmp_path)),
                             COMMAND)
    assert _clones_of(rendered["cx_module.c"], function) == clones


def test_rendering_twice_gives_identical_text(examples):
    again = render_module(load_module("pkg.ex", [str(EXAMPLES)], source_root=str(EXAMPLES.parent)),
                          COMMAND)
    assert again == examples


def test_the_output_holds_no_timestamp_or_absolute_path(examples):
    for text in examples.values():
        assert not re.search(r"\d{4}-\d{2}-\d{2}|\d{2}:\d{2}:\d{2}", text)
        assert str(EXAMPLES.parent) not in text


def test_the_generated_c_starts_with_a_banner_naming_the_source_and_the_regenerate_command(examples):
    head = examples["ex_module.c"].split("\n")[:5]
    assert head[0] == "/*"
    assert head[1] == " * pkg.ex: generated by ufuncgen from examples.ufunc."
    assert "Do not edit" in head[2]
    assert head[3] == " *     " + COMMAND
    assert head[4] == " */"


def test_the_stub_names_its_source_and_is_valid_python(examples):
    stub = examples["ex.pyi"]
    assert stub.startswith("# pkg.ex: generated by ufuncgen from examples.ufunc. Do not edit.\n")
    compile(stub, "ex.pyi", "exec")
    # Any, as NumPy's own ufunc stubs return (a call of scalars gives a NumPy scalar).
    assert "def __call__(self, x: _ArrayLike, /, out: _Any = None, **kwargs: _Any) -> _Any:" \
        in stub


# Functions named like the stub's imports and its classes (`_NAME` once named f's class).
CLASHING_NAMES = ("f", "_f", "Any", "ArrayLike", "NDArray", "Function", "Function_f", "typing",
                  "tuple", "_tuple")


def _clashing_stub(tmp_path) -> str:
    source = tmp_path / "names.ufunc"
    source.write_text("".join(f"ufunc {name}(x) -> y\n    types: float64(float64)\n{{ y = x; }}\n\n"
                              for name in CLASHING_NAMES) +
                      "ufunc pair(x) -> (a, b)\n    types: (float64, float64)(float64)\n"
                      "{ a = x; b = x; }\n")
    module = load_module("pkg.names", [str(source)], source_root=str(tmp_path))
    return render_module(module, COMMAND)["names.pyi"]


def test_the_stubs_own_names_cannot_clash_with_a_functions_name(tmp_path):
    import ast
    stub = _clashing_stub(tmp_path)
    bound = []
    for node in ast.parse(stub).body:
        if isinstance(node, ast.ImportFrom):
            bound += [alias.asname or alias.name for alias in node.names]
        elif isinstance(node, ast.ClassDef):
            bound.append(node.name)
        elif isinstance(node, ast.AnnAssign):
            bound.append(node.target.id)
    assert len(bound) == len(set(bound)), sorted(bound)
    assert set(CLASHING_NAMES) <= set(bound)
    # Annotations name no builtin a function could rebind: a function `tuple` made every
    # multiple-output function's `-> tuple[...]` refer to it.
    names_read = {n.id for n in ast.walk(ast.parse(stub))
                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert not names_read & set(CLASHING_NAMES), sorted(names_read & set(CLASHING_NAMES))


def test_a_function_without_inputs_has_a_docstring_signature_python_can_read():
    # It began "zero(, /, out=None, ...", which is no Python.
    import ast
    from ufuncgen.gen.call import call_text
    text = call_text("zero", [], False)
    assert text.startswith("zero(out=None, *, where=True, ")
    ast.parse(f"def {text}: pass")
    assert call_text("f", ["x", "k"], True).startswith("f(x, k, /, out=None, *, axes=")


# mypy is not ufuncgen's code: under tools/sanitize.sh (libasan preloaded into every Python
# process) LeakSanitizer would report what its orjson keeps until exit.
MYPY_ENV = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}


@pytest.mark.skipif(subprocess.run([sys.executable, "-m", "mypy", "--version"], env=MYPY_ENV,
                                   capture_output=True).returncode != 0, reason="needs mypy")
def test_mypy_accepts_the_stub_of_functions_named_like_its_own_names_and_calls_as_numpys(
        tmp_path):
    (tmp_path / "names.pyi").write_text(_clashing_stub(tmp_path))
    (tmp_path / "use.py").write_text(
        "import numpy as np\nimport names\n"
        "y = names.Any(np.ones(3))\nz = names._f(1.0)\n"
        "reveal_type(names.Function)\n"
        # outputs one by one after the inputs, as NumPy's ufuncs take them, or by keyword
        "a, b = names.pair(np.ones(3), np.empty(3), np.empty(3))\n"
        "c, d = names.pair(np.ones(3), out=(np.empty(3), np.empty(3)))\n"
        "e = names.f(np.ones(3), np.empty(3))\n"
        # what a ufunc has besides its methods
        "name: str = names.f.__name__ + names.f.__qualname__\n"
        "types = names.f.resolve_dtypes((np.dtype('f8'), None))\n")
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental",
                             "--cache-dir", os.devnull, "names.pyi", "use.py"], cwd=tmp_path,
                            env=MYPY_ENV, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'Revealed type is "names._Function_Function"' in result.stdout


def test_each_body_is_preceded_by_a_line_directive_to_its_first_line_in_the_signature_file(examples):
    """A body is emitted as the user's lines from its `{` line to its `}` line, under a #line
    naming the `{` line (so an error seen only at the closing brace names the user's `}`); a
    helper's prototype (its declaration, then its definition) under a #line naming its
    `helper` line, at the prototype's column there."""
    source = EXAMPLES.read_text().split("\n")
    lines = _file_names_spelt_out(examples["ex_bodies.h"]).split("\n")
    seen = prototypes = declarations = stores = cxx_only = resume = 0
    for i, text in enumerate(lines):
        m = _LINE.fullmatch(text)
        if i < resume:
            continue            # inside a body checked whole below
        if not m or m[2] != "examples.ufunc":
            continue
        first = int(m[1])
        if source[first - 1].startswith("helper "):
            # the prototype at its own columns: a compiler's caret lands on the user's text
            assert lines[i - 1] == "UFG_HELPER_FN"
            if lines[i + 1].endswith(";"):
                declarations += 1
                assert lines[i + 1] == " " * len("helper ") + source[first - 1][len("helper "):] + ";"
            else:
                prototypes += 1
                assert lines[i + 1] == " " * len("helper ") + source[first - 1][len("helper "):]
            continue
        if source[first - 1].startswith(("ufunc ", "gufunc ")):
            stores += 1         # an output's store, under its name: see the next test
            continue
        seen += 1
        assert source[first - 1] == "{", f"#line {first} is not a '{{' line"
        if lines[i + 2] == "#ifdef __cplusplus":
            # C++ (nvcc) gets the text whose signed +, -, * wrap (gen/operators.py), the C
            # compilers the user's lines; each under a #line naming the body's first line.
            cxx_only += 1
            other = lines.index("#else", i)
            end = lines.index("#endif", other)
            assert lines[i + 3] == lines[other + 1] == f'#line {first + 1} "examples.ufunc"'
            assert lines[other + 2:end] == source[first:first + end - other - 2]
            assert end - other == other - i - 2, "both texts have the body's lines"
            assert lines[end + 1] == f'#line {first + end - other - 1} "examples.ufunc"'
            assert lines[end + 2] == "}" == source[first + end - other - 2]
            resume = end + 3
            continue
        k = 0
        while not lines[i + 1 + k].startswith("#line"):
            assert lines[i + 1 + k] == source[first - 1 + k]
            k += 1
        assert source[first - 2 + k] == "}", "a body ends at its closing '}'"
    # a body per type signature, its float-reading copy where a gufunc loop's core inputs are
    # float16 or bfloat16 (inner1d and l2_norm: 3), its copy for the host's scalar code where
    # it calls hypot (hypot and polar_distance: 4), its copy for the blocks after a special
    # argument where it calls exp or log (gaussian_pdf: 2), and each helper once per type whose
    # bodies call it
    module = load_module("pkg.ex", [str(EXAMPLES)], source_root=str(EXAMPLES.parent))
    helpers = sum(len(helpers) for _, helpers in module.helper_instances)
    widened = sum(1 for f in module.functions for s in f.signatures if f.widened_args(s))
    scalar = sum(len(f.signatures) for f in module.functions if f.name in module.scalar_body_functions)
    special = sum(1 for f in module.functions for s in f.signatures
                  if special_kernel(f, s, module))
    assert prototypes == declarations == helpers
    assert widened == 3 and scalar == 4 and special == 2
    assert seen == (sum(len(f.signatures) for f in module.functions) + widened + scalar
                    + special + helpers) == 50
    assert stores == sum(len(f.signatures) * sum(a.is_scalar for a in f.outputs)
                         for f in module.functions) + widened + scalar + special
    assert cxx_only > 0         # lucas and the integer loops of add, matmul, ...


def test_the_store_of_a_scalar_output_reads_it_under_its_name_in_the_declaration(examples):
    """A body that never sets an output draws GCC's "used uninitialized" warning at the `=` of
    the store: placed at the output's name, the warning names the user's line and column."""
    source = EXAMPLES.read_text().split("\n")
    lines = _file_names_spelt_out(examples["ex_bodies.h"]).split("\n")
    checked = set()
    for i, text in enumerate(lines):
        m = _LINE.fullmatch(text)
        if not m or m[2] != "examples.ufunc" or not source[int(m[1]) - 1].startswith(("ufunc ", "gufunc ")):
            continue
        header, store = source[int(m[1]) - 1], lines[i + 1]
        name = re.fullmatch(r" *= (\w+);", store)[1]
        assert lines[i - 1] == f"    *ufg_out_{name}"
        assert header.index(name, header.index("->")) == store.index("=")
        checked.add(header.split("(")[0])
    assert {"ufunc sincos", "gufunc l2_norm", "ufunc add"} <= checked


def test_every_helper_of_a_t_is_declared_before_any_is_defined(tmp_path):
    """So that a helper may call one defined after it in the file."""
    source = tmp_path / "order.ufunc"
    source.write_text(
        "helper T before(T v)\n{\n    return after(v);\n}\n\n"
        "helper T after(T v)\n{\n    return v;\n}\n\n"
        "ufunc f(x) -> y\n    types: float64(float64)\n{\n    y = before(x);\n}\n")
    bodies = render_module(load_module("pkg.order", [str(source)], source_root=str(tmp_path)),
                           COMMAND)["order_bodies.h"]
    helpers = bodies.split("helpers, per T that uses them")[1].split("---- f:")[0]
    order = [line.strip() for line in helpers.split("\n") if line.strip().startswith("T ")]
    assert order == ["T before(T v);", "T after(T v);", "T before(T v)", "T after(T v)"]


def test_a_source_path_holding_a_comment_end_does_not_end_the_banner_comments(tmp_path):
    folder = tmp_path / "a*"
    folder.mkdir()
    (folder / "f.ufunc").write_text("ufunc f(x) -> y\n    types: float64(float64)\n{\n    y = x;\n}\n")
    files = render_module(load_module("pkg.star", [str(folder / "f.ufunc")], source_root=str(tmp_path)),
                          "python -m ufuncgen.gen --module pkg.star -o OUTDIR a*/f.ufunc")
    for name in ("star_module.c", "star_bodies.h", "star_kernels.cu", "star_kernels_fastmath.cu"):
        banner = files[name].split("*/")[0]
        assert "a*\\/f.ufunc" in banner and "generated by ufuncgen" in banner, name


def test_after_each_body_a_line_directive_points_back_at_the_generated_file_with_true_numbers(examples):
    lines = examples["ex_bodies.h"].split("\n")
    back = [(i, int(m[1])) for i, t in enumerate(lines) if (m := _LINE.fullmatch(t)) and m[2] == "ex_bodies.h"]
    assert back
    for index, number in back:
        # `#line N` says the *next* line is line N; line numbers count from 1
        assert index + 2 == number
        assert not lines[index - 1].startswith("#line")


def test_line_directives_name_a_signature_file_by_a_macro_the_cuda_kernels_may_define_first(
        examples):
    """nvcc lists the files #line directives name in its dependency file: under the name
    relative to the source root, make finds no such file in the build folder, and the kernels
    were compiled again at every build.  The bodies header names each file by a macro, which
    it defines as messages show the file unless the including file defined it; the kernels,
    under nvcc, include the full paths the build wrote (ufuncgen.cmake), where there are
    some.  The generated text holds no full path (test_the_output_holds_no_..._path)."""
    bodies = examples["ex_bodies.h"]
    assert ('#ifndef UFG_SOURCE_FILE_0\n#define UFG_SOURCE_FILE_0 "examples.ufunc"\n#endif\n'
            in bodies)
    named = [m[2] for t in bodies.split("\n") if (m := re.fullmatch(r"#line (\d+) (.+)", t))]
    assert set(named) == {"UFG_SOURCE_FILE_0", '"ex_bodies.h"'}
    for kernels in ("ex_kernels.cu", "ex_kernels_fastmath.cu"):
        text = examples[kernels]
        cuda = text[text.index("#ifdef __CUDACC__"):text.index("#else")]
        assert ('#if __has_include("ex_source_files.h")\n#include "ex_source_files.h"\n#endif\n'
                in cuda)
        assert text.index('"ex_source_files.h"') < text.index('#include "ex_bodies.h"')


def test_the_body_directive_of_a_function_names_its_brace_line(examples):
    text = _file_names_spelt_out(examples["ex_bodies.h"])
    source = EXAMPLES.read_text().split("\n")
    first = source.index("    out = x * y + x;") + 1       # custom_op's only body line
    assert f'#line {first - 1} "examples.ufunc"\n{{\n    out = x * y + x;\n}}\n#line ' in text


def test_the_display_path_is_quoted_as_a_c_string():
    assert c_string('dir with "quotes"\\x.ufunc') == '"dir with \\"quotes\\"\\\\x.ufunc"'
    assert c_string("a\nb\tc") == '"a\\nb\\tc"'


def test_write_outputs_writes_new_files_and_leaves_unchanged_ones_alone(tmp_path, examples):
    out = tmp_path / "gen"
    written = write_outputs(examples, str(out))
    assert sorted(written) == [str(out / name) for name in GENERATED]
    assert (out / "ex_module.c").read_text() == examples["ex_module.c"]
    past = 1_000_000_000
    for name in examples:
        os.utime(out / name, (past, past))
    assert write_outputs(examples, str(out)) == []
    assert all(os.stat(out / name).st_mtime == past for name in examples)
    assert not list(out.glob("*.tmp"))


def test_write_outputs_rewrites_only_the_file_whose_text_changed(tmp_path, examples):
    write_outputs(examples, str(tmp_path))
    changed = dict(examples, **{"ex.pyi": examples["ex.pyi"] + "# changed\n"})
    assert write_outputs(changed, str(tmp_path)) == [str(tmp_path / "ex.pyi")]


def test_generate_returns_the_files_it_wrote_and_nothing_the_second_time(tmp_path):
    out = str(tmp_path / "gen")
    first = generate("ex", [str(EXAMPLES)], out, source_root=str(EXAMPLES.parent))
    assert sorted(os.path.basename(p) for p in first) == GENERATED
    assert generate("ex", [str(EXAMPLES)], out, source_root=str(EXAMPLES.parent)) == []
    banner = (tmp_path / "gen" / "ex_module.c").read_text().split("\n")[3]
    assert banner == " *     python -m ufuncgen.gen --module ex -o OUTDIR examples.ufunc"


def _gen_command(args, cwd):
    return subprocess.run([sys.executable, "-m", "ufuncgen.gen", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def test_the_generator_command_writes_sources_with_paths_relative_to_the_source_root(tmp_path):
    result = _gen_command(["--module", "pkg.ex", "-o", str(tmp_path / "out"),
                           "--source-root", str(EXAMPLES.parent.parent), str(EXAMPLES)], tmp_path)
    assert result.returncode == 0, result.stderr
    text = _file_names_spelt_out((tmp_path / "out" / "ex_bodies.h").read_text())
    assert '#line 10 "signatures/examples.ufunc"\n{\n' in text
    assert (tmp_path / "out" / "ex.pyi").exists()


def test_the_generator_command_reports_a_bad_file_and_writes_nothing(tmp_path):
    (tmp_path / "bad.ufunc").write_text("ufunc f(x) -> y\n    types: float64(float64, float64)\n{\n}\n")
    result = _gen_command(["--module", "bad", "-o", "out", "bad.ufunc"], tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("bad.ufunc:2:12: error: type signature float64(float64, float64) "
                                    "has 2 input types, but 'f' takes 1 argument (x)\n")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def _build(tmp_path: Path, text: str, name: str) -> subprocess.CompletedProcess:
    (tmp_path / f"{name}.ufunc").write_text(text)
    return subprocess.run([sys.executable, "-m", "ufuncgen", "build", f"{name}.ufunc", "--name",
                           name, "-o", ".", "--cuda-arch", "none"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)


def test_a_body_that_never_sets_its_output_builds_with_a_warning_at_the_outputs_name(tmp_path):
    result = _build(tmp_path, "ufunc f(x) -> y\n"
                              "    types: float64(float64)\n"
                              "{\n"
                              "    double y = x * 2;   /* a local hides the output */\n"
                              "    y += 1;\n"
                              "}\n", "unset")
    assert result.returncode == 0, result.stderr
    warning = result.stderr.translate({0x2018: "'", 0x2019: "'"}).splitlines()
    assert warning[:3] == ["unset.ufunc:1:15: warning: 'y' is used uninitialized [-Wuninitialized]",
                           "    ufunc f(x) -> y", "                  ^"]


def test_a_gufunc_body_writing_into_an_input_fails_at_the_users_line(tmp_path):
    result = _build(tmp_path, "gufunc first_set(a) -> m\n"
                              "    layout: (n)->()\n"
                              "    types: float64(float64)\n"
                              "{\n"
                              "    a(0) = 1;\n"
                              "    m = a(0);\n"
                              "}\n", "writes_input")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("writes_input.ufunc:5:10: error: assignment of an element of "
                                     "'a', an input: a body reads its inputs and writes only its "
                                     "outputs\n")
    assert not list(tmp_path.glob("writes_input*.so"))


def test_a_dim_expression_that_divides_by_zero_or_overflows_fails_the_call_not_the_process(tmp_path):
    script = textwrap.dedent("""
        import numpy as np, ufuncgen
        from numpy.lib.stride_tricks import as_strided
        m = ufuncgen.load('''
        gufunc strided(x, w) -> y
            layout: (n),(k)->(q)
            dim: q = n / k
            types: float64(float64, float64)
        {
            for (int64_t i = 0; i < q; i++) y(i) = x(i * k);
        }

        gufunc pairs(x) -> y
            layout: (n)->(p)
            dim: p = n * (n - 1) / 2 - -n % 3
            types: float64(float64)
        {
            for (int64_t i = 0; i < p; i++) y(i) = 0;
        }
        ''', cuda_arch="none")
        print(m.strided(np.arange(6.), np.zeros(2)).tolist())
        for n in (0, 1, 5, 6):
            # C's % truncates: -n % 3 is -(n % 3)
            assert m.pairs(np.zeros(n)).shape == (n * (n - 1) // 2 + n % 3,), n
        for call in (lambda: m.strided(np.arange(6.), np.zeros(0)),
                     lambda: m.pairs(as_strided(np.zeros(1), (2923175692643,), (0,))),
                     lambda: m.pairs(as_strided(np.zeros(1), (2**32,), (0,)))):
            try:
                call()
            except ValueError as e:
                print(e)
    """)
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "[0.0, 2.0, 4.0]",
        "strided: core dimension q = n/k divides by zero for the input core dimensions of this call",
        "pairs: core dimension p = n*(n-1)/2--n%3 overflows a 64-bit integer for the input core "
        "dimensions of this call",
        "pairs: core dimension p = n*(n-1)/2--n%3 overflows a 64-bit integer for the input core "
        "dimensions of this call"]


def test_a_macro_a_function_body_defines_ends_with_that_body_but_a_helpers_does_not(tmp_path):
    (tmp_path / "m.ufunc").write_text(
        "helper T twice(T x)\n{\n#define FACTOR 2\n    return FACTOR * x;\n}\n\n"
        "ufunc f(x) -> y\n    types: float64(float64)\n{\n#define N 4\n    y = twice(x) * N;\n}\n\n"
        "gufunc g(x) -> y\n    layout: (N)->()\n    types: float64(float64)\n{\n"
        "    y = N * FACTOR;\n}\n")
    generate("m", [str(tmp_path / "m.ufunc")], str(tmp_path / "out"))
    bodies = (tmp_path / "out" / "m_bodies.h").read_text().split("\n")
    assert bodies.count("#undef N") == 1 and "#undef FACTOR" not in bodies
    undef = bodies.index("#undef N")
    assert bodies[undef - 2:undef] == ["}", f"#line {undef + 1} \"m_bodies.h\""]


# Arguments named like the generated code's own variables: the loops' block buffers and
# counters (block_a beside a float16 a, m, start, value_y beside a float16 output y), the body
# functions' pointers, strides and index parameters (i0, out_y, core_strides, a_s0), the
# widened copies' steps (steps), the computed dimension's function (sizes, ufunc).
NAMES_LIKE_GENERATED_ONES = """\
ufunc blocked(a, block_a, m, start, value_y) -> y
    types: float16(float16, float32, float32, float32, float32)
{
    y = a + block_a + (T)2 * m + (T)3 * start + (T)4 * value_y;
}

gufunc weighted(i0, out_y, core_strides, a, a_s0, steps) -> y
    layout: (n),(n),(n),(n),(n),(n)->()
    types: float32(float32, float32, float32, float32, float32, float16)
{
    T acc = 0;
    for (int64_t k = 0; k < n; k++)
        acc += i0(k) * out_y(k) + core_strides(k) - a(k) * a_s0(k) + steps(k);
    y = acc;
}

gufunc differences(x) -> d
    layout: (sizes)->(ufunc)
    dim: ufunc = sizes - 1
    types: float64(float64)
{
    for (int64_t k = 0; k < ufunc; k++)
        d(k) = x(k + 1) - x(k);
}
"""


def test_arguments_named_like_the_generated_variables_compute_what_their_bodies_say(
        tmp_path, module_importer, compile_check_cuda_arch):
    import numpy as np
    m = module_importer(tmp_path, "named_alike", NAMES_LIKE_GENERATED_ONES,
                        "--cuda-arch", compile_check_cuda_arch)
    rng = np.random.default_rng(5)
    # 600 elements: the float16 arguments go through the block conversion (ufg_block_*).
    a = rng.uniform(-2, 2, 600).astype(np.float16)
    rest = [rng.uniform(-2, 2, 600).astype(np.float32) for _ in range(4)]
    want = (a.astype(np.float32) + rest[0] + 2 * rest[1] + 3 * rest[2] + 4 * rest[3])
    np.testing.assert_array_equal(m.blocked(a, *rest), want.astype(np.float16))
    # A C-contiguous stack of rows: the widened copies of the float16 `steps` (ufg_wide_*).
    core = [rng.uniform(-2, 2, (50, 7)).astype(np.float32) for _ in range(5)]
    steps = rng.uniform(-2, 2, (50, 7)).astype(np.float16)
    terms = core[0] * core[1] + core[2] - core[3] * core[4] + steps.astype(np.float32)
    want = np.array([sum(row[1:], row[0]) for row in terms], dtype=np.float32)
    np.testing.assert_array_equal(m.weighted(*core, steps), want)
    x = rng.uniform(-5, 5, (4, 9))
    np.testing.assert_array_equal(m.differences(x), np.diff(x, axis=-1))
    # The bodies' own names (out, core, stride) on the device path too.
    from ufuncgen import device
    on = device.to_device
    np.testing.assert_array_equal(m.blocked(on(a), *map(on, rest)).copy_to_host(),
                                  m.blocked(a, *rest))
    np.testing.assert_array_equal(m.weighted(*map(on, core), on(steps)).copy_to_host(),
                                  m.weighted(*core, steps))
    np.testing.assert_array_equal(m.differences(on(x)).copy_to_host(), np.diff(x, axis=-1))


def test_each_loop_defines_the_floating_type_of_its_constants_beside_t(tmp_path):
    """UFG_CONSTANT_T, the type of PI, TWO_PI, SQRT2, LN2 and I (prelude.h): T where T is
    floating or complex, else the first floating type among the outputs then the inputs,
    double when there is none; a helper's, T or double."""
    source = tmp_path / "consts.ufunc"
    source.write_text(
        "helper T twice(T v)\n{\n    return v + v;\n}\n\n"
        "ufunc f(n, x) -> y\n"
        "    types: float64(int64, float64), float32(int32, float32), float32(float32, float32), "
        "complex64(int32, int32), float16(int16, int16), int32(uint8, uint8), float64(int8, float16), "
        "float16(uint16, float64)\n"
        "{\n    y = twice(n) * PI + x;\n}\n")
    bodies = render_module(load_module("pkg.consts", [str(source)], source_root=str(tmp_path)),
                           COMMAND)["consts_bodies.h"]
    loops = re.findall(r"#define UFG_CONSTANT_T (\w+)\n(?:#define twice \w+\n)?\s*"
                       r"UFG_BODY_FN void\nufg_body_f_(\w+)\(", bodies)
    defined = {suffix: constant_type for constant_type, suffix in loops}
    assert defined == {"int64_float64__float64": "double", "int32_float32__float32": "float",
                       "float32": "T", "int32_int32__complex64": "float",
                       "int16_int16__float16": "float", "uint8_uint8__int32": "double",
                       "int8_float16__float64": "double", "uint16_float64__float16": "double"}
    helpers = re.findall(r"#define T (\w+)\n#define UFG_CONSTANT_T (\w+)\n#define twice", bodies)
    assert ("int64_t", "double") in helpers and ("float", "T") in helpers
