"""Model → generated sources, through the Jinja2 templates in `templates/`.

One environment with StrictUndefined; what the templates need to know about C or about
docstrings lives in the filters below, so the templates only loop over the model.
Output is deterministic, and a file whose text is unchanged is not rewritten (so build
systems do not recompile it).
"""
from __future__ import annotations

import math
import os
import re
from functools import lru_cache

import jinja2

from .call import call_text
from .element_types import ElementType
from .model import Arg, Body, Function, Module, Specialization
from .parse import blank_c_noise

# templates/ is the generator's sibling in both layouts: gen/ and templates/ at the top of the
# source tree (an editable install imports ufuncgen.gen from there too), ufuncgen/gen and
# ufuncgen/templates once installed.
TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "templates")
_GENERATED_LINE = "#line UFG_GENERATED_LINE"



def c_string(text: str) -> str:
    """A C string literal holding `text`."""
    escaped = (text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
               .replace("\t", "\\t"))
    return f'"{escaped}"'


def c_comment(text: str) -> str:
    """`text` inside a /* comment */: a path holding `*/` (a folder `a*`) would end it."""
    return text.replace("*/", "*\\/").replace("\n", " ")


_DEFINE = re.compile(r"\s*#\s*define\s+([A-Za-z_]\w*)")


def c_body(body: Body, scope_macros: bool = True) -> str:
    """The user's lines in a block, with #line directives so compiler messages name the user's
    file.  The block's braces are the user's `{` and `}` lines: an error the compiler only sees
    at the closing brace (a body ending in an unfinished statement) names the user's `}`.
    A macro the body #defines ends with it (`scope_macros`), so that it cannot rewrite the
    names of the functions after it (a `#define N 4` against a later layout's `n`, `N`)."""
    undefs = [f"#undef {m[1]}" for line in body.lines if (m := _DEFINE.match(line))]
    if body.cxx_lines == body.compiled_lines:
        code = list(body.compiled_lines)
    else:
        # C++ (nvcc) compiles the text whose signed +, - and * wrap (gen/operators.py); the C
        # compiles wrap with -fwrapv, on the text as written.
        start = f"#line {body.first_line} {c_string(body.path)}"
        code = ["#ifdef __cplusplus", start, *body.cxx_lines, "#else", start,
                *body.compiled_lines, "#endif",
                f"#line {body.first_line + len(body.lines)} {c_string(body.path)}"]
    lines = [f"#line {body.first_line - 1} {c_string(body.path)}", "{", *code, "}",
             _GENERATED_LINE, *(dict.fromkeys(undefs) if scope_macros else ())]
    return "\n".join(lines)


def c_param(arg: Arg, t: ElementType) -> str:
    """How a body's argument arrives in the body function.  Every name the generated code
    gives an argument is `ufg_<role>_<argument's name>`, one role word per kind of variable
    (`out`, `core`, `stride0`, ...; in the loops `arg`, `block`, `value`, ...), and no other
    generated name starts with a role word and `_`: so no two can be spelled alike, whatever
    the user names the arguments (`block_a` beside `a`, `out_y` beside `y`, `i0`)."""
    if arg.is_scalar and not arg.is_output:
        return f"const {t.c_type} {arg.name}"
    if arg.is_scalar:
        return f"{t.c_type} *ufg_out_{arg.name}"
    return f"char *ufg_core_{arg.name}"


def output_store(arg: Arg) -> str:
    """`*ufg_out_y = y;` for a scalar output, its `= y` placed at the output's name in the
    user's declaration: a body that never sets `y` (or hides it behind a local of its own) then
    draws the compiler's "used uninitialized" warning there (GCC places it at the `=`)."""
    return "\n".join([f"    *ufg_out_{arg.name}",
                      f"#line {arg.location.line} {c_string(arg.location.path)}",
                      " " * (arg.location.col - 1) + f"= {arg.name};",
                      _GENERATED_LINE])


def load(expression: str, t: ElementType) -> str:
    """An element read from memory (`expression`, of t's storage type) as the body sees it."""
    return f"{t.load}({expression})" if t.converts else expression


def store(expression: str, t: ElementType) -> str:
    """A body's value (`expression`, of t's C type) as it is stored in memory."""
    return f"{t.store}({expression})" if t.converts else expression


def device_read(arg: Arg, sig, offset: str) -> str:
    """A device kernel's read of scalar input `arg` as stored, `offset` bytes into its array
    (or its value, passed by value)."""
    return f"UFG_ARGUMENT({sig.all_types[arg.index].storage_type}, &p, {arg.index}, {offset})"


def element_arguments(fn: Function, sig, offset: str, values: str | None = None) -> str:
    """What a device kernel passes ufg_element_* after `&p`: each scalar input's value as
    stored, read `offset` bytes in (or the local `values` names, read before), each other
    argument's byte offset.  "@" in `offset` and `values` stands for the argument's index."""
    def one(arg: Arg) -> str:
        where = offset.replace("@", str(arg.index))
        if not (arg.is_scalar and not arg.is_output):
            return where
        return values.replace("@", str(arg.index)) if values else device_read(arg, sig, where)
    return "".join(f", {one(arg)}" for arg in fn.args)


def uses_cub(module: Module, fastmath: bool) -> bool:
    """Whether a kernel file (the fast-math one or the other) includes CUB: some function of
    it reduces and scans whole lines with CUB's algorithms, which an associative function
    with a reduction does."""
    return any(fn.associative and fn.reduce_signatures and fn.fastmath == fastmath
               for fn in module.functions)


def core_accessor(arg: Arg, t: ElementType) -> str:
    """`x(i, j)`: one element of a core array, whatever its strides: an lvalue, or for an
    input stored as another type (float16) its value (the model refuses such outputs)."""
    index = ", ".join(f"ufg_index{k}" for k in range(len(arg.core_dims)))
    offset = " + ".join(f"(ufg_index{k}) * ufg_stride{k}_{arg.name}"
                        for k in range(len(arg.core_dims)))
    # An input is const: a body writing into it would change the caller's array.
    const = "" if arg.is_output else "const "
    element = f"*({const}{t.storage_type} *)(ufg_core_{arg.name} + {offset})"
    return f"#define {arg.name}({index}) ({load(element, t)})"


def core_size(dim) -> str:
    """C: one core dimension's size in a loop (`dimensions[1 + i]`), or its frozen number."""
    return str(dim.frozen_size) if dim.frozen_size is not None else f"dimensions[{dim.index + 1}]"


def contiguous_steps(fn: Function, sig, widened: bool = False) -> list[str]:
    """NumPy's `steps` for a gufunc call whose every argument is C-contiguous, outer loop
    included, as C expressions over `dimensions`: the outer steps (one per argument), then
    each argument's core strides.  A frozen dimension is its number, so that the compiler
    sees constant strides where the layout fixes them.  `widened`: the steps of the widened
    copies (fn.widened_args), floats where the call has float16 or bfloat16."""
    wide = fn.widened_args(sig) if widened else ()

    def itemsize(a) -> int:
        t = sig.all_types[a.index]
        return (t.widened if a in wide else t).itemsize

    def product(size: int, dims) -> str:
        return " * ".join([str(size)] + [core_size(d) for d in dims])

    outer = [product(itemsize(a), a.core_dims) for a in fn.args]
    core = [product(itemsize(a), a.core_dims[j + 1:])
            for a in fn.args for j in range(len(a.core_dims))]
    return outer + core


def rows_share_memory(fn: Function, sig) -> str:
    """C: whether an output's outer iterations write memory that another one writes too (an
    `out=` of outer step 0, or rows closer than their span), or two outputs meet: NumPy runs
    them in order, the last one's writes winning, so such a call must not be split across
    threads.  Over NumPy's
    `dimensions` and `steps` (the outer steps, then each argument's core strides)."""
    step = len(fn.args)
    core_steps = {}
    for a in fn.args:
        for j in range(len(a.core_dims)):
            core_steps[a.index, j] = step
            step += 1
    spans = {a.index: " + ".join([str(sig.all_types[a.index].itemsize)] + [
        f"(dimensions[{d.index + 1}] - 1) * ufg_step_size(steps[{core_steps[a.index, j]}])"
        for j, d in enumerate(a.core_dims)]) for a in fn.outputs}
    tests = [f"ufg_rows_overlap(dimensions[0], steps[{a.index}], {spans[a.index]})"
             for a in fn.outputs]

    def reach(a, direction: str, start: str) -> str:
        return " + ".join([start] + [
            f"ufg_core_reach_{direction}(dimensions[{d.index + 1}], steps[{core_steps[a.index, j]}])"
            for j, d in enumerate(a.core_dims)])

    extents = {a.index: f"{reach(a, 'below', '0')}, "
                        f"{reach(a, 'above', str(sig.all_types[a.index].itemsize))}"
               for a in fn.outputs}
    tests += [f"ufg_outputs_meet(args[{a.index}], steps[{a.index}], {extents[a.index]}, "
              f"args[{b.index}], steps[{b.index}], {extents[b.index]}, dimensions[0])"
              for i, a in enumerate(fn.outputs) for b in fn.outputs[i + 1:]]
    return " || ".join(tests)


def step_walks(fn: Function) -> list[int]:
    """For each of contiguous_steps' steps, the index in NumPy's `dimensions` of the dimension
    it moves along: 0 (the outer loop) for the outer steps, then 1 + each core dimension's."""
    return [0 for _ in fn.args] + [d.index + 1 for a in fn.args for d in a.core_dims]


def core_elements(arg: Arg) -> str:
    """C: how many elements one outer iteration of `arg` holds, the product of its core sizes."""
    return " * ".join(core_size(d) for d in arg.core_dims) or "1"


def specialization_test(spec: Specialization) -> str:
    """C: does this call have the specialized sizes?"""
    return " && ".join(f"{core_size(d)} == {size}" for d, size in spec.sizes)


def _dimensions_with(fn: Function, fixed: dict[int, int]) -> str:
    """C: NumPy's `dimensions` (the outer size, then each core dimension) with the sizes of
    `fixed` (core dimension index: size) as constants, for an initializer the compiler folds
    into the body."""
    return ", ".join(["dimensions[0]"] + [str(fixed[d.index]) if d.index in fixed
                                          else core_size(d) for d in fn.layout.dims])


def specialized_dimensions(spec: Specialization, fn: Function) -> str:
    """C: NumPy's `dimensions` with the specialized sizes as constants."""
    return _dimensions_with(fn, {d.index: size for d, size in spec.sizes})


def call_signature(fn: Function) -> str:
    return call_text(fn.name, [a.name for a in fn.inputs], fn.is_gufunc)


def _doc_details(fn: Function, module: Module) -> str:
    outs = ", ".join(a.name for a in fn.outputs)
    lines = []
    if fn.doc:
        lines += [fn.doc, ""]
    if fn.is_gufunc:
        lines += [f"Layout: {fn.layout.text}"]
        lines += [f"    {d.name} = {''.join(d.size_expression.split())}" for d in fn.layout.computed_dims]
        lines += [f"Specialized loop: {spec.text}" for spec in fn.specializations]
    lines += [f"Returns: {outs}", "", "Types:"]
    lines += [f"    {sig.text}" for sig in fn.signatures]
    path = fn.body.path
    lines += ["", f"Generated by ufuncgen from {path}:{fn.location.line} into {module.qualified_name}."]
    return "\n".join(lines)


def wrapper_doc(fn: Function, module: Module) -> str:
    return call_signature(fn) + "\n\n" + _doc_details(fn, module)


def ufunc_doc(fn: Function, module: Module) -> str:
    return _doc_details(fn, module)


def identity_spec(fn: Function) -> str:
    """The identity fields of a function's descriptor (ufuncgen/descriptor.h)."""
    ident = fn.identity
    if ident is None:
        return '.identity = PyUFunc_None,'
    if ident.kind == "reorderable":
        return '.identity = PyUFunc_ReorderableNone,'
    kind = {"int": "i", "float": "f", "bool": "b"}[ident.value_kind]
    return (f".identity = PyUFunc_IdentityValue, .identity_kind = '{kind}', "
            f".identity_literal = {c_string(ident.python_literal)},")


def descriptor_flags(fn: Function) -> str:
    """The UFG_FN_* flags of a function's descriptor."""
    flags = [name for name, on in (("UFG_FN_ASSOCIATIVE", fn.associative),
                                   ("UFG_FN_THREADS", fn.threads),
                                   ("UFG_FN_FASTMATH", fn.fastmath)) if on]
    return " | ".join(flags) or "0"


def target_clones(fn: Function, sig, module: Module) -> str:
    """The CPU-dispatch macro (ufuncgen/host_loops.h) for a loop's functions.

    - Complex loops that may multiply or divide complex values, without fast math, get no FMA
      clone (GCC fuses the complex product there); abs(z) or exp(z) alone keeps AVX-512 (|z|
      of complex128 over 4M elements: 4.7 ns an element in the AVX2 clone, 2.1 in AVX-512).
    - Gufuncs get no AVX-512 clone, unless their body calls vector math (exp, sin, ...) and
      every core dimension is frozen.  NumPy's large arrays start 16 bytes past a 64-byte
      boundary, so every unaligned 512-bit load of a contiguous stream splits a cache line;
      256-bit ones split every other.  On an AMD EPYC (Zen 5), one thread, against
      @guvectorize in one process: rgb_to_gray over 2000x2000x3 float32 1.55 ms in the AVX2
      clone, 2.51 ms in AVX-512 (float64 3.26 against 5.26), matmul 5x5 float32 3.69 against
      4.03, the others within 5%.  With variable core dimensions GCC 12 also vectorizes a
      body's in-order loop over a core dimension (acc += x(i) * x(i)) at 512 bits as a serial
      chain of lane extractions.
    - Elementwise loops keep AVX-512: their bodies' math calls run libmvec's 512-bit variants
      (hypot float64 over 10M elements: 13.0 ms in AVX-512, 28.1 in the AVX2 clone; gelu 4.5
      against 37.5), and their arithmetic streams lose less to split loads (add float64: the
      same in both)."""
    if sig.has_complex and not fn.fastmath and fn.name in module.complex_product_functions:
        return "UFG_TARGET_CLONES_WITHOUT_FMA"
    if fn.is_gufunc and (fn.layout.variable_dims or fn.name not in module.vector_math_functions):
        return "UFG_TARGET_CLONES_UP_TO_AVX2"
    return "UFG_TARGET_CLONES"


def stream_kernel(fn: Function, sig, module: Module) -> bool:
    """Whether an elementwise loop gets a copy of its kernel compiled up to AVX2 for calls
    larger than the caches (host_loops.h, ufg_kernel_for_call): one of the full clones whose
    body calls no vector math (libmvec's 512-bit variants pay in any call: target_clones) and
    has no conditional (flag-exact: GCC's AVX2 code cannot mask an arm's operation, for its
    flags, and left `x < y ? x * y : y` scalar and branchy there, 48 ms over 10M float32
    where AVX-512 takes 3.7; a `relu` lost 8% in float64 without the copy).  A
    stream at 512 bits ran slower than at 256 on an AVX-512 EPYC, where a body that computes
    in cache runs faster at 512 (both measured in host_loops.h).  Not a complex loop whose
    body calls a function (abs, real, ...) or loops: GCC's AVX2 code for complex values
    shuffles their parts, and |z| of complex64 took 0.43 ns an element there against 0.29 in
    AVX-512, from 360,000 elements (the copy's threshold) to 4M (0.77x-0.87x np.abs;
    1.05x-1.17x without the copy); `x + y` of complex128, a stream, keeps it (8% faster with
    it over 2M elements).  Nor a loop of 64-bit integers that
    multiplies two values (multiplies_values): AVX2 has no 64-bit multiply, and a cubic
    polynomial over 2M int64 took 0.94 ms there against 0.63 in AVX-512, where `x + y` into
    out= takes 6.4 ms in the copy against 7.3."""
    return (not fn.is_gufunc and fn.name not in module.flag_exact_functions
            and not (sig.has_complex and body_operations(fn) is None)
            and not (any(t.kind in "iu" and t.itemsize == 8 for t in sig.all_types)
                     and multiplies_values(fn))
            and target_clones(fn, sig, module) == "UFG_TARGET_CLONES")


def reduce_clones(fn: Function, sig, module: Module) -> str:
    """The CPU-dispatch macro of an associative function's vectorized .reduce loop: the AVX2
    clone, whose 256-bit loads split half as many cache lines (target_clones) as AVX-512's,
    unless its body calls vector math.  add.reduce of 10M float32 values, one thread: 0.87 ms
    against 1.16 in the AVX-512 clone; along the contiguous axis of 10,000 x 1,000 of them 1.23
    against 1.53; float64 within 6% either way."""
    clones = target_clones(fn, sig, module)
    if clones == "UFG_TARGET_CLONES" and fn.name not in module.vector_math_functions:
        return "UFG_TARGET_CLONES_UP_TO_AVX2"
    return clones


# Elements an iteration of a kernel's loop over elements whose body loops over the data
# (kernel_unroll).
SCALAR_UNROLL = 4


def kernel_unroll(fn: Function, sig, module: Module) -> int:
    """How many elements an iteration of an elementwise kernel's loop runs, each through its
    own copy of the body: SCALAR_UNROLL for a body whose own loop the data ends
    (Module.data_loop_functions), whose loop over elements GCC 12 leaves scalar and does not
    unroll (it unrolls no loop holding another), else 1.  int_power (x**n by squaring) over
    200,000 int64 on a Zen 4 EPYC, one thread, out= given: 1177 us in one copy, 1119 in 2,
    1103 in 4, 1071 in 8, Numba @vectorize (LLVM unrolls its loop 4 times) 1135; with Numba's
    own inner loop in one copy, 1171: the copies, not the inner loop, make the difference.
    collatz_steps within 1%.  Every element's operations are the same, in the same order: the
    same bits and flags."""
    return SCALAR_UNROLL if fn.name in module.data_loop_functions else 1


def special_kernel(fn: Function, sig, module: Module) -> bool:
    """Whether an elementwise loop gets a kernel for the blocks after one whose exp underflowed
    or whose log divided by zero (Module.special_kernel_flags): a loop of real types stored as
    they compute (a complex exp is the prelude's own; float16 blocks convert apart)."""
    return (fn.name in module.special_kernel_flags
            and all(t.storage is None and not t.is_complex for t in sig.all_types))


def special_kernel_flags(fn: Function, module: Module) -> str:
    """The C expression of the flags after which a block runs that kernel (fp_errors.h)."""
    return " | ".join(module.special_kernel_flags[fn.name])


def scalar_gives_vector_bits(fn: Function, sig, module: Module) -> bool:
    """Whether every element of an elementwise loop gets the same bits from its scalar copy and
    its vector loop, wherever a call is split between them: no vector math (libmvec differs
    from scalar libm by a few ULP), no fast math (a vector reciprocal estimate), no complex
    values, no float16 or bfloat16 (their blocks convert apart), no unsigned output beside a
    floating input (a NaN, an infinity or a value out of range converts to an unsigned integer
    one way in scalar x86-64 code and another in AVX-512's: C leaves it undefined).  Such a loop
    runs the elements of a contiguous call before its first output's next cache line apart, so
    that the vector loop stores whole lines (host_loops.h, ufg_run_aligned), and a call of one
    element (a .at update) through its scalar copy, without the vector loop's set-up."""
    return (not fn.is_gufunc and not fn.fastmath
            and fn.name not in module.vector_math_functions
            and all(t.storage is None and not t.is_complex for t in sig.all_types)
            and not (any(t.kind == "u" for t in sig.outputs)
                     and any(t.is_float for t in sig.inputs)))


# A cast to a type a body names, `(T)3`, `(int64_t)(x + y)`: dropped, so that `(T)3 * x` reads
# `3 * x` and `(T)(x)` is no call (`(exp)(x)` still is).
_CAST = re.compile(r"\(\s*(?:const\s+)?(?:T|u?int(?:8|16|32|64)_t|complex(?:64|128)_t|size_t"
                   r"|(?:(?:unsigned|signed|long|short|int|char|float|double|_Bool|bool)\b\s*)+)"
                   r"\s*\)")
# Each binary `*` (or `*=`) after a name, a number, `)` or `]`: the tokens either side of it, a
# unary operator before the right one skipped.  A lookahead, so that in `3 * x * y` the pair
# `x * y` is found as well as `3 * x`.
_PRODUCT = re.compile(r"(?=((?<![\w.])[\w.]+|[)\]])\s*\*=?\s*(?:[-+~!]\s*)*([\w.]+|\())")
# A number in parentheses, `(T)(3)` once the cast is dropped: a number.
_PARENTHESIZED_NUMBER = re.compile(r"\(\s*0\s*\)")


def multiplies_values(fn: Function) -> bool:
    """Whether an elementwise body multiplies two values neither of which is a number written
    in it (`x * y`, `(x + 1) * x`, `x * -y`; not `3 * x` nor `x * -3`, which compile to shifts
    and adds), or calls a function or loops (its work unknown: assumed so)."""
    code = _PARENTHESIZED_NUMBER.sub("0", _CAST.sub("", _body_code(fn)))
    if _CALL_OR_LOOP.search(code):
        return True
    return any(left != "0" and right != "0" for left, right in _PRODUCT.findall(code))


# The most operations (render.body_operations) of a body whose strided calls run in place.
IN_PLACE_OPERATIONS = 3

_NUMBER = re.compile(r"(?<![\w.])\.?\d(?:[eEpP][-+]|[\w.])*")
# A name followed by `(` (`if` and `sizeof` aside), or `)(`: a call through a parenthesized
# callee, `(exp)(x)` (a cast `(T)(x)` counts too, which only keeps a body in blocks).
_CALL_OR_LOOP = re.compile(r"\b(?!if\b|sizeof\b)[A-Za-z_]\w*\s*\(|\)\s*\(")
_OPERATOR = re.compile(r"[-+*/%<>!=]=|&&|\|\||<<|>>|[-+*/%<>?&|^~!]")


def _body_code(fn: Function) -> str:
    """An elementwise body's code without comments and strings, each number written `0`."""
    return _NUMBER.sub("0", blank_c_noise("\n".join(fn.body.lines)))


def body_operations(fn: Function) -> int | None:
    """How many operators an elementwise body's code holds (a cast's star and a unary minus
    count, an assignment does not), or None where it calls a function (a helper, hypot, sqrt)
    or loops: an estimate of its work for an element."""
    code = _body_code(fn)
    if _CALL_OR_LOOP.search(code):
        return None
    return len(_OPERATOR.findall(code))


def strided_kernel(fn: Function, sig, module: Module) -> bool:
    """Whether an elementwise loop gets a kernel that runs a strided call over the call's own
    steps, each element read and written in place, not vectorized (host_loops.h,
    ufg_in_place_pays): a loop whose scalar copy gives its vector loop's bits (so that which
    kernel runs an element changes nothing, nor do the flags of a body with a conditional: that
    copy raises those a block's re-run would), whose body is at most IN_PLACE_OPERATIONS
    operations, where gathering a strided input costs more than the vector loop saves.  On an
    AVX-512 EPYC, 100,000 float32 of a[::3], one thread: `(0.1 * x + 0.2) * x + 0.3` (four
    operations) took 38 us in blocks and 46 in place, `2.5 * x + y` over two such inputs 68
    and 37."""
    operations = body_operations(fn)
    return (scalar_gives_vector_bits(fn, sig, module) and operations is not None
            and operations <= IN_PLACE_OPERATIONS)


def broadcast_kernel_inputs(fn: Function, sig, module: Module) -> tuple:
    """The inputs of an elementwise loop that get a kernel of their own for calls where that
    input alone is broadcast (stride 0) and every other argument contiguous: every input of a
    loop of two or more whose scalar and vector code give the same bits, so that reading the
    value once gives a buffer of its copies' bits, and that re-runs no block for its flags (the
    scalar copy reads arrays)."""
    if (len(fn.inputs) < 2 or fn.name in module.flag_exact_functions
            or not scalar_gives_vector_bits(fn, sig, module)):
        return ()
    return tuple(fn.inputs)


# The core sizes for which a gufunc's contiguous loop runs its rows in SIMD lanes (lane_sizes).
LANE_SIZES = range(2, 17)


def lane_sizes(fn: Function, sig, module: Module) -> tuple[int, ...]:
    """The sizes of a gufunc's one variable core dimension for which its C-contiguous loop runs
    a block of rows at a time, one in each SIMD lane (eight float32 in AVX2): each core input's
    rows copied into a buffer where the rows' elements lie side by side (ufg_range_lanes_*), the
    size a constant, so that GCC unrolls the body's loops over it and vectorizes the loop over
    the block's rows.  A body's in-order loop over a short row is one chain of dependent steps;
    eight of them side by side run at once (l2_norm over rows of 10 float32 in cache: 1.5 ns a
    row in place of 3.6).  Each lane runs the body's operations in its own order, so the bits
    are those of one row at a time, wherever a call's blocks begin.  Only where that holds
    without more: no vector math (libmvec differs from libm in the last bits), no fast math, no
    conditional (its flags), float32 or float64, no output with core dimensions, one variable
    core dimension and none computed.  `specialize:` sizes keep their own loop.  float64 rows,
    four to a block, measured within the noise of one row at a time on an AVX2-only Zen 5
    (rows of 10 in cache: 3.1 to 4.8 ns a row against 4.4 to 7.8), but on an AVX-512 EPYC
    l2_norm over 1M rows of 3, 8, 10 and 16 ran at 3.2x, 1.6x, 1.65x and 1.55x Numba's
    @guvectorize against 1.0x and 1.15x one row at a time (inner1d, memory-bound, alike either
    way), for 20% more compile time of the shipped examples; integer loops are left as they
    were until measured."""
    dims = fn.layout.variable_dims if fn.is_gufunc else ()
    if (len(dims) != 1 or fn.layout.computed_dims or fn.fastmath
            or any(not a.is_scalar for a in fn.outputs)
            or fn.name in module.vector_math_functions
            or fn.name in module.flag_exact_functions
            or any(t.name not in ("float32", "float64") for t in sig.all_types)):
        return ()
    declared = {size for spec in fn.specializations for _, size in spec.sizes}
    return tuple(size for size in LANE_SIZES if size not in declared)


def lane_dimensions(fn: Function, size: int) -> str:
    """C: NumPy's `dimensions` with the one variable core dimension `size` (lane_sizes)."""
    return _dimensions_with(fn, {d.index: size for d in fn.layout.variable_dims})


def lane_itemsize(fn: Function, sig) -> int:
    """The itemsize of a gufunc's widest core input: UFG_LANE_BYTES of it make the rows a block
    of its lanes loop holds (lane_sizes)."""
    return max(sig.all_types[a.index].itemsize for a in fn.inputs if not a.is_scalar)


def lane_row_elements(arg: Arg) -> int:
    """How many elements one row of core input `arg` holds at the largest lane size."""
    return math.prod(max(LANE_SIZES) if d.is_variable else d.frozen_size for d in arg.core_dims)


def dtype_code(t: ElementType) -> str:
    """The runtime's code of an element type (ufuncgen/cast_element.h's UFG_DT_<NAME>)."""
    return f"UFG_DT_{t.name.upper()}"


def py_doc(text: str) -> str:
    return '"""' + text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"') + '\n"""'


@lru_cache(maxsize=None)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters.update(
        c_string=c_string, c_comment=c_comment, c_body=c_body, c_param=c_param,
        output_store=output_store, core_accessor=core_accessor,
        load=load, store=store, dtype_code=dtype_code,
        device_read=device_read, element_arguments=element_arguments, uses_cub=uses_cub,
        wrapper_doc=wrapper_doc, ufunc_doc=ufunc_doc, identity_spec=identity_spec,
        descriptor_flags=descriptor_flags, target_clones=target_clones, reduce_clones=reduce_clones,
        kernel_unroll=kernel_unroll, special_kernel=special_kernel, stream_kernel=stream_kernel,
        special_kernel_flags=special_kernel_flags,
        scalar_gives_vector_bits=scalar_gives_vector_bits,
        broadcast_kernel_inputs=broadcast_kernel_inputs, strided_kernel=strided_kernel,
        call_signature=call_signature, py_doc=py_doc, contiguous_steps=contiguous_steps,
        rows_share_memory=rows_share_memory, source_file_macro=source_file_macro,
        step_walks=step_walks,
        core_elements=core_elements,
        specialization_test=specialization_test, specialized_dimensions=specialized_dimensions,
        lane_sizes=lane_sizes, lane_dimensions=lane_dimensions,
        lane_row_elements=lane_row_elements, lane_itemsize=lane_itemsize,
        core_size=core_size,
    )
    return env


def source_file_macro(index: int) -> str:
    """The macro a #line directive names the module's `index`-th signature file by."""
    return f"UFG_SOURCE_FILE_{index}"


def _name_source_files_by_macro(text: str, module: Module) -> str:
    """Each #line directive naming a signature file names it by its macro instead.  The
    bodies header defines the macros as the files are shown in messages (`f.ufunc`), unless
    the including file defined them first: the CUDA kernels define the files' full paths,
    because nvcc lists a #line directive's file in its dependency file, and make takes a
    relative name there for a file missing from the build folder, out of date at every build."""
    macros = {c_string(path): source_file_macro(i) for i, path in enumerate(module.sources)}
    lines = text.split("\n")
    for i, line in enumerate(lines):
        parts = line.split(" ", 2)
        if parts[0] == "#line" and len(parts) == 3 and parts[2] in macros:
            lines[i] = f"#line {parts[1]} {macros[parts[2]]}"
    return "\n".join(lines)


def _number_generated_lines(text: str, filename: str) -> str:
    """Turn each #line marker back into a directive pointing at the generated file itself."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line == _GENERATED_LINE:
            lines[i] = f"#line {i + 2} {c_string(filename)}"
    return "\n".join(lines)


def render_module(module: Module, command: str) -> dict[str, str]:
    """{file name: text} for every file generated for `module`."""
    env = environment()
    context = dict(module=module, command=command)
    name = module.short_name
    outputs = {f"{name}.pyi": env.get_template("module.pyi.j2").render(context)}
    for file_name, template in ((f"{name}_module.c", "module.c.j2"),
                                (f"{name}_bodies.h", "bodies.h.j2")):
        text = env.get_template(template).render(context)
        outputs[file_name] = _number_generated_lines(_name_source_files_by_macro(text, module),
                                                     file_name)
    # The kernels of functions that opt in to fast math go to a file of their own, which nvcc
    # compiles with --use_fast_math (it has no per-function switch).
    for kernels, fastmath in ((f"{name}_kernels", False), (f"{name}_kernels_fastmath", True)):
        text = env.get_template("kernels.cu.j2").render(context, fastmath=fastmath)
        outputs[f"{kernels}.cu"] = _number_generated_lines(text, f"{kernels}.cu")
        # The simulator compiles the very same kernel text with the host compiler.
        outputs[f"{kernels}_sim.c"] = (
            f"/* {module.qualified_name}: the simulator's build of {kernels}.cu (UFUNCGEN_DEVICE=sim). */\n"
            f'#include "{kernels}.cu"\n')
    return outputs


def write_outputs(outputs: dict[str, str], out_dir: str) -> list[str]:
    """Writes each file whose text changed; returns the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, text in sorted(outputs.items()):
        path = os.path.join(out_dir, name)
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() == text:
                    continue
        except OSError:
            pass
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        written.append(path)
    return written
