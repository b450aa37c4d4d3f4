"""The generator's model: plain frozen data, built from the raw parse and validated once.

Templates see only these objects. Every check on a signature file lives here, and every
failure becomes a `file:line:col: error:` diagnostic; all of a file's errors are collected
before the generator gives up.
"""
from __future__ import annotations

import dataclasses
import functools
import keyword
import re
import textwrap
from dataclasses import dataclass

from . import limits
from .operators import arithmetic_operators, body_names, rewrite_operators
from .element_types import ELEMENT_TYPES, ElementType
from .call import GUFUNC_KEYWORDS, UFUNC_KEYWORDS
from .diagnostics import DiagnosticSink, Location
from .parse import (ParseError, RawDimDefinition, RawFile, RawFunction, RawHelper, RawLayout,
                    RawSpecialization, Token, blank_c_noise)

# Limits checked at `ufuncgen check`, so that a file that checks also builds and imports.
# limits.py is their one definition (emitted as C into ufuncgen/limits.h).
UFG_MAX_ARGS = limits.MAX_ARGS
NPY_MAXARGS = limits.NPY_MAXARGS
MAX_ARGS = min(UFG_MAX_ARGS, NPY_MAXARGS)   # inputs + outputs
# NumPy's signature parser refuses a frozen size it reads as LLONG_MAX or more (found by
# experiment with NumPy 2.x: 9223372036854775806 parses, ...807 does not), and the module
# would then fail at import.
NPY_MAX_FROZEN_SIZE = 2**63 - 2
UFG_DEVICE_MAX_CORE_DIMS = limits.DEVICE_MAX_CORE_DIMS
UFG_DEVICE_MAX_CORE_STRIDES = limits.DEVICE_MAX_CORE_STRIDES

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Names a function, argument, output, helper or core dimension may not take, and why: bodies
# compile as C (host loops) and as CUDA C++ (nvcc), inside code that ufuncgen generates around
# them, so a name must be free in both languages, in the headers that code includes, and in the
# generated code itself.  The one table of reserved names; `reserved_reason` reads it.
_C_KEYWORD = "is a C or C++ keyword"
_HEADER_NAME = "is defined by the C headers the generated code includes"
_PRELUDE_NAME = "is reserved for ufuncgen's prelude of body functions (abs, min, max, clamp, sign)"
RESERVED_NAMES: dict[str, str] = {
    **dict.fromkeys("""
        auto break case char const continue default do double else enum extern float for goto
        if inline int long register restrict return short signed sizeof static struct switch
        typedef union unsigned void volatile while
        bool true false alignas alignof constexpr nullptr static_assert thread_local typeof
        typeof_unqual
        and and_eq asm bitand bitor catch char8_t char16_t char32_t class compl concept
        const_cast consteval constinit co_await co_return co_yield decltype delete dynamic_cast
        explicit export friend mutable namespace new noexcept not not_eq operator or or_eq
        private protected public reinterpret_cast requires static_cast template this throw try
        typeid typename using virtual wchar_t xor xor_eq
    """.split(), _C_KEYWORD),
    **dict.fromkeys("""
        int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t
        intmax_t uintmax_t size_t ptrdiff_t NULL errno I complex imaginary complex64_t
        complex128_t NAN INFINITY
        HUGE_VAL HUGE_VALF HUGE_VALL EOF BUFSIZ FILENAME_MAX RAND_MAX EXIT_SUCCESS EXIT_FAILURE
        CHAR_BIT MB_LEN_MAX CLOCKS_PER_SEC stdin stdout stderr assert offsetof unix linux
    """.split(), _HEADER_NAME),
    **dict.fromkeys("abs min max clamp sign".split(), _PRELUDE_NAME),
    **dict.fromkeys("PI TWO_PI SQRT2 LN2".split(),
                    "is a constant of ufuncgen's prelude of body functions (PI, TWO_PI, SQRT2, LN2)"),
    "main": "is reserved in C: it names the program's entry point",
    # The generated code #defines (and #undefs) a helper's name and a core argument's accessor,
    # and the preprocessor refuses `defined` as a macro name.
    "defined": "is the C preprocessor's operator ('#if defined(X)'), which cannot be "
               "#defined as a name",
    "T": "is reserved by ufuncgen: inside a body T is the element type",
}
# Words of a body's code that C and nvcc's CUDA C++ do not read alike, each with why and what to
# write instead: found anywhere in a body's or helper's code (not in its comments or strings)
# and refused there, since the host's C compiler would accept what nvcc refuses, or mean
# something else.  (C99's `restrict`, `_Bool` and `_Static_assert` need no entry: the prelude
# gives them their C meaning in C++.)
_CXX_ALTERNATIVE_TOKENS = {"and": "&&", "and_eq": "&=", "bitand": "&", "bitor": "|",
                           "compl": "~", "not": "!", "not_eq": "!=", "or": "||", "or_eq": "|=",
                           "xor": "^", "xor_eq": "^="}
_CXX_ONLY_KEYWORDS = frozenset("""
    alignas alignof catch char8_t class concept const_cast consteval constexpr constinit
    co_await co_return co_yield decltype delete dynamic_cast explicit export friend mutable
    namespace new noexcept nullptr operator private protected public reinterpret_cast requires
    static_cast template this thread_local throw try typeid typename using virtual
    char16_t char32_t wchar_t
""".split())
# C99's <complex.h>, which nvcc's C++ does not have, and the prelude's portable spelling.
_C99_COMPLEX = {
    **{f"c{name}{suffix}": f"{name}(...)" for name in
       "exp log sqrt pow sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh".split()
       for suffix in ("", "f", "l")},
    **{f"c{name}{suffix}": f"{name}(...)" for name in ("real", "imag", "abs")
       for suffix in ("", "f", "l")},
    **{f"carg{suffix}": "arg(...)" for suffix in ("", "f", "l")},
    **{f"conj{suffix}": "conj(...)" for suffix in ("f", "l")},
    **{f"cproj{suffix}": None for suffix in ("", "f", "l")},
    **{f"CMPLX{suffix}": "x + y * I" for suffix in ("", "F", "L")},
    **dict.fromkeys(("complex", "_Complex", "imaginary", "_Imaginary"),
                    "complex64_t or complex128_t (or T where T is complex)"),
    **dict.fromkeys(("_Complex_I", "_Imaginary_I"), "I"),
}


def cxx_incompatible_words(text: str) -> list[tuple[int, str, str]]:
    """(offset, word, message) for each word of C text (comments and literals blanked) that
    C and C++ read differently: a C++-only keyword or operator spelling, C99's complex names,
    `static` inside an array parameter's brackets.  Each word once, where it first appears."""
    found = []
    seen = set()
    for m in re.finditer(r"\b[A-Za-z_]\w*\b", text):
        word = m.group(0)
        if word in seen:
            continue
        if word in _CXX_ALTERNATIVE_TOKENS:
            message = (f"'{word}' is C++'s spelling of '{_CXX_ALTERNATIVE_TOKENS[word]}', and a "
                       f"body is also compiled as C++ (nvcc), where it cannot name a variable; "
                       f"C has no such operator: rename it, or write "
                       f"'{_CXX_ALTERNATIVE_TOKENS[word]}'")
        elif word in _CXX_ONLY_KEYWORDS:
            message = (f"'{word}' is a keyword of C++, and a body is also compiled as C++ (nvcc), "
                       f"where it cannot name a variable or a parameter; rename it")
        elif word in _C99_COMPLEX:
            instead = _C99_COMPLEX[word]
            message = (f"'{word}' is C99's <complex.h>, which C++ (nvcc, compiling every body "
                       f"too) does not have" +
                       (f": write {instead}" if instead else ": compute it from real(z), imag(z)"))
        elif word == "long" and re.match(r"\s+double\b", text[m.end():]):
            message = ("'long double' is x86's 80-bit extended type on the host and a 64-bit "
                       "double on the GPU (nvcc), so a body computing in it gives different "
                       "results on each; write double")
        elif word == "__auto_type":
            message = ("'__auto_type' is a GNU C extension that C++ (nvcc, compiling every body "
                       "too) does not have; declare the type (T, double, int64_t, ...)")
        elif word == "static" and re.search(r"\[\s*(?:const\s+|volatile\s+|restrict\s+)*$",
                                            text[:m.start()]):
            message = ("'static' in an array parameter's brackets ('a[static 3]') is C99 only: "
                       "C++ (nvcc) refuses it; write 'a[3]', or 'const T *a'")
        else:
            continue
        seen.add(word)
        found.append((m.start(), word, message))
    for m in _SCALAR_BRACE_LIST.finditer(text):
        opening = m.end() - 1
        closing = _matching(text.replace("{", "(").replace("}", ")"), opening, 1)
        if closing > 0 and _top_level_comma(text[opening + 1:closing]):
            found.append((opening, m.group("name"),
                          f"'{m.group('name')}' holds one value but is initialized from a list "
                          f"of several: C keeps the first (with a warning), C++ (nvcc, "
                          f"compiling every body too) refuses the list or, where T is complex, "
                          f"takes it as the real and imaginary parts; write one value "
                          f"(x + y * I for a complex one)"))
    return sorted(found)


# A declaration of one value of a scalar type initialized from a brace list: `T w = {x, 2};`.
_SCALAR_BRACE_LIST = re.compile(
    r"\b(?:T|complex64_t|complex128_t|float|double|u?int(?:8|16|32|64)_t|int|long|short|char|"
    r"unsigned|signed|bool|_Bool)\s+(?P<name>[A-Za-z_]\w*)\s*=\s*\{")


def _top_level_comma(text: str) -> bool:
    depth = 0
    for c in text:
        depth += c in "([{"
        depth -= c in ")]}"
        if c == "," and depth == 0:
            return True
    return False


# Names an input may not take: the call's own parameters (f(x, /, out=None, *, where=True,
# ...), NumPy's keywords of a ufunc's or a gufunc's call, a method's self, the stub's kwargs),
# which the stub, the docstring and inspect.signature would then name twice.
CALL_PARAMETERS = tuple(dict.fromkeys(
    ("out", *(k for k, _ in UFUNC_KEYWORDS + GUFUNC_KEYWORDS), "kwargs", "self")))
# Every function of the body prelude (src/include/ufuncgen/prelude.h): a helper so named would
# be rewritten by the prelude's macro of that name.
PRELUDE_FUNCTIONS = frozenset("""
    abs sign min max clamp fmin fmax pow fma sqrt cbrt exp exp2 expm1 log log2 log10 log1p
    sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh erf erfc tgamma lgamma floor
    ceil trunc round rint nearbyint fabs atan2 hypot fmod copysign fdim remainder nextafter
    logb isnan isinf isfinite isnormal signbit fpclassify isless isgreater islessequal
    isgreaterequal islessgreater isunordered ldexp scalbn scalbln frexp ilogb lround llround
    lrint llrint nexttoward j0 j1 y0 y1 jn yn real imag conj arg
""".split())
# Those of them that are no function of <math.h>: ufuncgen's own, or its spelling of <complex.h>'s.
_PRELUDE_ONLY = frozenset("abs sign min max clamp real imag conj arg".split())
# Attributes the generated code and ufuncgen's headers give in __attribute__((...)), after a
# helper's `#define NAME NAME__T`: a helper so named would rewrite them.
GCC_ATTRIBUTES = frozenset("""
    always_inline noinline unused used optimize target target_clones aligned visibility
    flatten cold hot noipa
""".split())
# The float and long double variants of <math.h>'s functions (sqrtf, expl, ...): the
# type-generic sqrt(x) of a body names them, so a name of the body's that takes one of them
# would stand in for the function there.
RESERVED_NAMES.update({
    function + suffix: (f"is a function of <math.h> (the {width} variant of {function}), which "
                        f"the type-generic {function} of a body calls")
    for function in sorted(PRELUDE_FUNCTIONS - _PRELUDE_ONLY)
    for suffix, width in (("f", "float"), ("l", "long double"))
    if function + suffix not in RESERVED_NAMES})
RESERVED_NAMES.update(dict.fromkeys("""
    memcpy memmove memset memcmp strlen strcmp strncmp strcpy malloc calloc realloc free
    printf fprintf sprintf snprintf puts abort exit qsort bsearch labs llabs div
""".split(), "is a function of the C library headers the generated code includes "
              "(<stdlib.h>, <string.h>, <stdio.h>)"))
# Object-like macros of the C library's and POSIX's headers that Python.h includes, found with
# `gcc -dM -E` of the generated code's includes (glibc): an argument or a local so named would
# be replaced by a number or a string.  (HEADER_MACRO below takes the families of <math.h>,
# <stdint.h>, <float.h>, <limits.h>, ...; <errno.h>'s are glibc's.)
_LIBRARY_MACROS = {
    "<errno.h>": """
        E2BIG EACCES EADDRINUSE EADDRNOTAVAIL EADV EAFNOSUPPORT EAGAIN EALREADY EBADE EBADF
        EBADFD EBADMSG EBADR EBADRQC EBADSLT EBFONT EBUSY ECANCELED ECHILD ECHRNG ECOMM
        ECONNABORTED ECONNREFUSED ECONNRESET EDEADLK EDEADLOCK EDESTADDRREQ EDOM EDOTDOT EDQUOT
        EEXIST EFAULT EFBIG EHOSTDOWN EHOSTUNREACH EHWPOISON EIDRM EILSEQ EINPROGRESS EINTR
        EINVAL EIO EISCONN EISDIR EISNAM EKEYEXPIRED EKEYREJECTED EKEYREVOKED EL2HLT EL2NSYNC
        EL3HLT EL3RST ELIBACC ELIBBAD ELIBEXEC ELIBMAX ELIBSCN ELNRNG ELOOP EMEDIUMTYPE EMFILE
        EMLINK EMSGSIZE EMULTIHOP ENAMETOOLONG ENAVAIL ENETDOWN ENETRESET ENETUNREACH ENFILE
        ENOANO ENOBUFS ENOCSI ENODATA ENODEV ENOENT ENOEXEC ENOKEY ENOLCK ENOLINK ENOMEDIUM
        ENOMEM ENOMSG ENONET ENOPKG ENOPROTOOPT ENOSPC ENOSR ENOSTR ENOSYS ENOTBLK ENOTCONN
        ENOTDIR ENOTEMPTY ENOTNAM ENOTRECOVERABLE ENOTSOCK ENOTSUP ENOTTY ENOTUNIQ ENXIO
        EOPNOTSUPP EOVERFLOW EOWNERDEAD EPERM EPFNOSUPPORT EPIPE EPROTO EPROTONOSUPPORT
        EPROTOTYPE ERANGE EREMCHG EREMOTE EREMOTEIO ERESTART ERFKILL EROFS ESHUTDOWN
        ESOCKTNOSUPPORT ESPIPE ESRCH ESRMNT ESTALE ESTRPIPE ETIME ETIMEDOUT ETOOMANYREFS ETXTBSY
        EUCLEAN EUNATCH EUSERS EWOULDBLOCK EXDEV EXFULL""",
    "<math.h>": "math_errhandling MAXFLOAT SNAN SNANF SNANL HUGE_VAL_F32 HUGE_VAL_F64",
    "<stdio.h>": "SEEK_SET SEEK_CUR SEEK_END SEEK_DATA SEEK_HOLE TMP_MAX FOPEN_MAX L_tmpnam "
                 "L_ctermid L_cuserid P_tmpdir",
    "<stdlib.h>": "MB_CUR_MAX",
    "<limits.h>": """
        AIO_PRIO_DELTA_MAX BC_BASE_MAX BC_DIM_MAX BC_SCALE_MAX BC_STRING_MAX BOOL_MAX BOOL_WIDTH
        CHARCLASS_NAME_MAX COLL_WEIGHTS_MAX DELAYTIMER_MAX EXPR_NEST_MAX HOST_NAME_MAX IOV_MAX
        LINE_MAX LOGIN_NAME_MAX MAX_CANON MAX_INPUT MQ_PRIO_MAX NAME_MAX NGROUPS_MAX NL_ARGMAX
        NL_LANGMAX NL_MSGMAX NL_NMAX NL_SETMAX NL_TEXTMAX NZERO PATH_MAX PIPE_BUF
        PTHREAD_DESTRUCTOR_ITERATIONS PTHREAD_KEYS_MAX PTHREAD_STACK_MIN RE_DUP_MAX RTSIG_MAX
        SEM_VALUE_MAX SSIZE_MAX TTY_NAME_MAX WORD_BIT XATTR_LIST_MAX XATTR_NAME_MAX
        XATTR_SIZE_MAX""",
    "<wchar.h>": "WEOF WINT_MAX WINT_MIN WINT_WIDTH",
    "<unistd.h>": "R_OK W_OK X_OK F_OK STDIN_FILENO STDOUT_FILENO STDERR_FILENO L_SET L_INCR "
                  "L_XTND",
    "<endian.h>": "BIG_ENDIAN LITTLE_ENDIAN PDP_ENDIAN BYTE_ORDER",
    "<sys/select.h>": "FD_SETSIZE NFDBITS",
    "<time.h>": "TIME_UTC CLOCKS_PER_SEC",
    "<sched.h>": "CPU_SETSIZE",
}
RESERVED_NAMES.update({
    name: f"is a macro of the C header {header}, which the generated code includes (through "
          f"Python.h): the preprocessor would replace it"
    for header, names in _LIBRARY_MACROS.items() for name in names.split()
    if name not in RESERVED_NAMES})
# Prefixes, each with why; checked in order, after the whole names above.
RESERVED_PREFIXES: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"ufg_|UFG_"), "is reserved by ufuncgen: the generated code's names start "
                               "with ufg_ and UFG_"),
    # Function names too: the generated stub's own names start with `_` and a capital letter
    # (templates/module.pyi.j2), and no function may take one of them.
    (re.compile(r"__|_[A-Z]"), "is reserved for the C and C++ implementation: names starting "
                               "with two underscores, or an underscore and a capital letter"),
    (re.compile(r"npy_|NPY_|Py[A-Z_]"), "is reserved by NumPy's and Python's C headers "
                                        "(npy_*, NPY_*, Py_*, PyName)"),
)
# The families of object-like macros of <math.h>, <fenv.h>, <limits.h>, <stdint.h> and
# <float.h>: an argument or local so named would be rewritten by the preprocessor.
HEADER_MACRO = re.compile(r"(?:M|FP|FE|MATH)_[A-Z0-9_]+\Z|(?:U?INT\d*|U?LONG|U?LLONG|U?SHRT|"
                          r"[SU]?CHAR|FLT|DBL|LDBL|SIZE|PTRDIFF|U?INTPTR|U?INTMAX|WCHAR|"
                          r"SIG_ATOMIC)_[A-Z0-9_]+\Z"
                          # <inttypes.h>'s format macros (PRId64, SCNx32) and pyconfig.h's
                          r"|(?:PRI|SCN)[diouxX](?:[0-9]+|FAST[0-9]+|LEAST[0-9]+|MAX|PTR)\Z"
                          r"|(?:PY|HAVE|SIZEOF|ALIGNOF)_[A-Z0-9_]+\Z")


def reserved_reason(name: str) -> str | None:
    """Why `name` cannot name a function, argument, helper or dimension; None when it can."""
    if keyword.iskeyword(name):
        return "is a Python keyword"
    if name in RESERVED_NAMES:
        return RESERVED_NAMES[name]
    if name in _C99_COMPLEX:
        return ("is a name of C99's <complex.h>, which C++ (nvcc, compiling every body too) "
                "does not have, so no body may use it: rename it")
    for prefix, reason in RESERVED_PREFIXES:
        if prefix.match(name):
            return reason
    if HEADER_MACRO.match(name):
        return ("is a macro of the C headers the generated code includes (M_PI, INT_MAX, "
                "FLT_EPSILON, FE_INVALID, ...)")
    return None


@dataclass(frozen=True)
class TypeSignature:
    inputs: tuple[ElementType, ...]
    outputs: tuple[ElementType, ...]
    location: Location

    @property
    def text(self) -> str:
        outs = self.outputs[0].name if len(self.outputs) == 1 else \
            "(" + ", ".join(t.name for t in self.outputs) + ")"
        return f"{outs}({', '.join(t.name for t in self.inputs)})"

    @property
    def all_types(self) -> tuple[ElementType, ...]:
        return self.inputs + self.outputs

    @property
    def suffix(self) -> str:
        """A C-name suffix unique within one function: `float32`, or `int64_float64__float64`."""
        names = [t.name for t in self.all_types]
        if len(set(names)) == 1:
            return names[0]
        return "_".join(t.name for t in self.inputs) + "__" + "_".join(t.name for t in self.outputs)

    @property
    def has_complex(self) -> bool:
        return any(t.is_complex for t in self.all_types)

    @property
    def element_type(self) -> ElementType:
        """`T` inside a body: the type of the first argument (the first output if there is none)."""
        return self.all_types[0]

    @property
    def constant_type(self) -> str:
        """The C type of the prelude's PI, TWO_PI, SQRT2, LN2 (and I's parts) in this loop's body
        (UFG_CONSTANT_T): T where T is floating or complex; where T is an integer or bool, the
        first floating type among the outputs and then the inputs, as the body holds it (of a
        complex type, its component type), double when there is none."""
        if self.element_type.is_inexact:
            return "T"
        held = self.body_types
        for t in held[len(self.inputs):] + held[:len(self.inputs)]:
            if t.is_inexact:
                return t.component_type or t.c_type
        return "double"

    @property
    def computes_in_double(self) -> bool:
        """The signature names float64 or complex128: a body's arithmetic with such an argument
        (or for such an output) is double by C's usual conversions."""
        return any(t.is_double for t in self.all_types)

    @property
    def body_types(self) -> tuple[ElementType, ...]:
        """The type of each argument and output as the body holds it, inputs first: all_types,
        but that in a signature computing in double a float16 output is a double, rounded to
        float16 once when it is stored (ElementType.held_in_double), as NumPy's float64 to
        float16 cast rounds; held in a float, the result would be rounded twice."""
        if not self.computes_in_double:
            return self.all_types
        return self.inputs + tuple(t.held_in_double for t in self.outputs)

    @property
    def is_numpy_builtin(self) -> bool:
        """Every type is one of NumPy's own: the loop is registered with the ufunc itself.
        Otherwise (bfloat16) it is added when the dtype's module can be imported.  Both have
        device kernels."""
        return all(t.is_numpy_builtin for t in self.all_types)


@dataclass(frozen=True)
class CoreDim:
    name: str                   # "n", or the digits of a frozen size: "3"
    index: int                  # position in NumPy's list of distinct core dimensions
    frozen_size: int | None     # (3)->() : 3
    size_expression: str | None  # an output-only dimension's size, as the user wrote it
    size_code: str | None = None  # the same as C over the input dims (divisions checked)

    @property
    def is_variable(self) -> bool:
        return self.frozen_size is None


@dataclass(frozen=True)
class Arg:
    name: str
    index: int                  # position among all arguments, inputs first
    is_output: bool
    core_dims: tuple[CoreDim, ...]
    first_core_stride: int      # where this argument's core strides start in NumPy's steps[nargs:]
    location: Location

    @property
    def is_scalar(self) -> bool:
        return not self.core_dims


@dataclass(frozen=True)
class CoreLayout:
    text: str                   # "(m,n),(n,p)->(m,p)"
    dims: tuple[CoreDim, ...]   # distinct dimensions, in NumPy's order

    @property
    def variable_dims(self) -> tuple[CoreDim, ...]:
        return tuple(d for d in self.dims if d.is_variable)

    @property
    def computed_dims(self) -> tuple[CoreDim, ...]:
        return tuple(d for d in self.dims if d.size_expression is not None)


@dataclass(frozen=True)
class Specialization:
    """`specialize: m=4, n=4, p=4`: a host loop compiled with these core sizes as constants,
    run for C-contiguous calls of exactly these sizes (the compiler unrolls and vectorizes
    what it can count)."""
    sizes: tuple[tuple[CoreDim, int], ...]     # in the layout's order of dimensions
    location: Location

    @property
    def text(self) -> str:
        return ", ".join(f"{d.name}={size}" for d, size in self.sizes)


# The functions vecmath.h declares to GCC as having libmvec vector variants, and the prelude's
# made of one of them (arg(x) of a real x is atan2(0, x)).
_VECTOR_MATH = ("exp log pow sin cos acos acosh asin asinh atan atanh cbrt cosh erf erfc exp10 "
                "exp2 expm1 log10 log1p log2 sinh tan tanh atan2 arg").split()
# A call of one: `exp(x)`, and past the prelude's macro, which a name not followed by `(` escapes,
# `(exp)(x)` and `(c ? exp : expm1)(x)`, which GCC vectorizes through libmvec all the same.
_VECTOR_MATH_CALL = re.compile(
    r"\b(?:{0})f?\s*\(|\(\s*(?:{0})f?\s*\)\s*\(|[?:]\s*(?:{0})f?\s*[:)]".format("|".join(_VECTOR_MATH)))

# The prelude's functions with a variant for scalar code (prelude.h, UFG_BODY_FLAVOUR): the
# same results and flags, behind branches that scalar code predicts where the vector code masks.
_SCALAR_VARIANT_CALL = re.compile(r"\bhypot\s*\(")

# C that decides whether an operation runs (`x < 0 ? -1 : sqrt(x)`, `if`, an early exit).  GCC's
# vectorizer may if-convert it into the operation computed on every lane, the guarded-off
# ones too, raising their flags (sqrt(-1) invalid, log(0) divide-by-zero, x * x overflow).
_CONDITIONAL = re.compile(r"\?|&&|\|\||\b(?:if|while|switch|goto|break|continue|return)\b")

# exp and log of a real argument: the host loops give a function whose body calls them a kernel
# for the blocks after one whose exp underflowed or whose log divided by zero
# (Module.special_kernel_flags), each name with the flag that calls for that kernel.
_SPECIAL_ARGUMENT_CALLS = {"exp": "UFG_FP_UNDERFLOW", "log": "UFG_FP_DIVIDE"}
_SPECIAL_ARGUMENT_CALL = re.compile(r"\b(exp|log)\s*\(")

# A loop whose trip count the data decides (`while (e > 0)`, `do ... while (v != 1)`): GCC 12
# vectorizes no loop over elements around one.  `while (0)` (a macro's do { } while (0)) loops
# once.
_DATA_LOOP = re.compile(r"\bwhile\s*\((?!\s*(?:0|false)\s*\))")


_DEFINE_LINE = re.compile(r"\s*#\s*define\b")


def _code_lines(body: Body) -> list[str]:
    """A body's lines without its C comments (a comment may mention exp( or a star)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), "\n".join(body.lines),
                  flags=re.S)
    return [line.split("//")[0] for line in text.split("\n")]


@dataclass(frozen=True)
class Identity:
    kind: str                   # "value", or "reorderable" (no identity, but reorderable)
    python_literal: str         # what `ufunc.identity` becomes: "0", "1.0", "inf", "True"
    value_kind: str             # "int", "float", "bool", "none"


@dataclass(frozen=True)
class Body:
    path: str                   # as written in #line directives
    first_line: int
    lines: tuple[str, ...]      # the user's lines, as written
    # The lines compiled (gen/operators.py): the user's with integer divisions made total, and
    # for C++ (nvcc) with signed +, -, * wrapping too; None until build_module rewrote them,
    # device_code also where it is the same as code.
    code: tuple[str, ...] | None = None
    device_code: tuple[str, ...] | None = None

    @property
    def compiled_lines(self) -> tuple[str, ...]:
        return self.lines if self.code is None else self.code

    @property
    def cxx_lines(self) -> tuple[str, ...]:
        """The lines nvcc (C++) compiles."""
        return self.compiled_lines if self.device_code is None else self.device_code


@dataclass(frozen=True)
class Function:
    name: str
    kind: str                   # "ufunc" or "gufunc"
    doc: str
    inputs: tuple[Arg, ...]
    outputs: tuple[Arg, ...]
    signatures: tuple[TypeSignature, ...]
    layout: CoreLayout | None
    identity: Identity | None
    fastmath: bool
    body: Body
    location: Location
    threads: bool = True        # large calls may run on several threads
    associative: bool = False   # `.reduce` may reorder: vectorized, pairwise, multi-core
    specializations: tuple[Specialization, ...] = ()

    @property
    def host_reduce_signatures(self) -> tuple[TypeSignature, ...]:
        """The loops that run NumPy's reduce calls as a reordered (pairwise, vectorized)
        reduction on the host: every loop of an `associative: true` function, which the
        validator allows only on binary functions whose loops take and give one type.  A
        float16 or bfloat16 loop's steps stay in float, rounded once per call
        (host_reduce.h)."""
        return self.signatures if self.associative else ()

    @property
    def in_order_reduce_signatures(self) -> tuple[TypeSignature, ...]:
        """The loops of a binary, one-output elementwise function not declared associative
        whose loop takes and gives one type: NumPy's reduce calls of them run in its order,
        every step rounded to the stored type, in one call of host_reduce_impl.h's `ordered`
        rather than one kernel call per element."""
        if self.associative or self.is_gufunc or len(self.inputs) != 2 or len(self.outputs) != 1:
            return ()
        return tuple(s for s in self.signatures if len(set(s.all_types)) == 1)

    @property
    def reducing_signatures(self) -> tuple[TypeSignature, ...]:
        """The loops whose NumPy reduce calls the host runs as a reduction (host_reduce_impl.h),
        reordered or in order: the two above."""
        return self.host_reduce_signatures + self.in_order_reduce_signatures

    @property
    def widened_reduce_signatures(self) -> tuple[TypeSignature, ...]:
        """The loops whose reductions step in the type the body computes in and round to the
        stored type once: an associative function's float16 and bfloat16 loops, as NumPy's
        own float16 add.  Once per loop call on the host (host_reduce.h); on the device once
        per thread's chunk (a partial result) and per reduceat segment.  Scans still round
        every step: each partial result is an output element."""
        return tuple(s for s in self.signatures if s.element_type.converts) \
            if self.associative else ()

    @property
    def args(self) -> tuple[Arg, ...]:
        return self.inputs + self.outputs

    def block_converted_args(self, sig: TypeSignature) -> tuple[Arg, ...]:
        """An elementwise loop's arguments whose type converts a block at a time
        (ElementType.load_block, store_block: float16): its kernels convert them to and from
        float buffers of UFG_BLOCK elements around the body's loop.  A float16 output held in
        a double (TypeSignature.body_types) converts element by element."""
        if self.is_gufunc:
            return ()
        types = sig.body_types
        return tuple(a for a in self.args
                     if (types[a.index].store_block if a.is_output else types[a.index].load_block))

    def widened_args(self, sig: TypeSignature) -> tuple[Arg, ...]:
        """A gufunc loop's core inputs stored as another type than the body computes in
        (float16, bfloat16): its contiguous loop converts them to float a block of outer
        iterations at a time, because GCC does not vectorize a body's in-order loop that mixes
        their 16-bit loads with float arithmetic (a float16 inner product ran 10x slower than
        the float32 one)."""
        if not self.is_gufunc:
            return ()
        return tuple(a for a in self.inputs
                     if not a.is_scalar and sig.all_types[a.index].converts)

    @property
    def numpy_signatures(self) -> tuple[TypeSignature, ...]:
        """The loops of NumPy's own types: the ufunc's loops, in order."""
        return tuple(s for s in self.signatures if s.is_numpy_builtin)

    @property
    def provided_signatures(self) -> tuple[TypeSignature, ...]:
        """The loops that name a dtype another package provides (bfloat16: ml_dtypes)."""
        return tuple(s for s in self.signatures if not s.is_numpy_builtin)

    @property
    def device_signatures(self) -> tuple[TypeSignature, ...]:
        """The loops with device kernels, in the order of the descriptor's device loops: NumPy's
        own, then the provided ones."""
        return self.numpy_signatures + self.provided_signatures

    @property
    def provided_dtype_modules(self) -> tuple[str, ...]:
        """The modules to import before the provided loops' dtypes can be named."""
        return tuple(dict.fromkeys(t.dtype_module for s in self.provided_signatures
                                   for t in s.all_types if t.dtype_module))

    @property
    def is_gufunc(self) -> bool:
        return self.layout is not None

    @property
    def reads_core_outputs_first(self) -> bool:
        """Whether the body's first mention of a core output, in the text, reads it (`y(i) +=
        x`, `++y(i)`, `t = y(i)`, `&y(i)`) rather than assigns it (`y(i) = ...`): it may then
        read what the caller's `out=` held, so its iterations cannot run twice (the
        flag-exact re-run would add to what the first run wrote).  A body that assigns an
        output before it reads it (softmax: `y(i) = exp(...)`, then `y(i) /= s`) can."""
        text = blank_c_noise("\n".join(self.body.lines))
        for arg in self.outputs:
            m = None if arg.is_scalar else re.search(rf"\b{arg.name}\s*\(", text)
            if m is None:
                continue
            close = _matching(text, m.end() - 1, +1)
            assigned = close >= 0 and re.match(r"\s*=(?!=)", text[close + 1:])
            before = text[:m.start()].rstrip()
            if not assigned or before.endswith(("++", "--")) or \
                    (before.endswith("&") and not before.endswith("&&")):
                return True
            # `y(i) = y(i) + ...` reads it all the same, and an assignment that may not run
            # (`if (c) y(i) = 0;`) leaves a later `y(i) +=` reading the caller's value.
            statement_end = _statement_end(text, close + 1)
            if re.search(rf"\b{arg.name}\s*\(", text[close + 1:statement_end]) or \
                    _may_not_run(text, m.start()):
                return True
        return False

    @property
    def reduce_signatures(self) -> tuple[TypeSignature, ...]:
        """The loops `.reduce` can run on the device: a binary ufunc whose loop takes and gives
        one type (the accumulator is fed back as the first input).  Without an identity a
        reduction starts from its first element, as NumPy's does."""
        if self.is_gufunc or len(self.inputs) != 2 or len(self.outputs) != 1:
            return ()
        return tuple(s for s in self.device_signatures if len(set(s.all_types)) == 1)

    @property
    def at_signatures(self) -> tuple[TypeSignature, ...]:
        """The loops `.at` can run on the device: every loop of a unary or binary ufunc of one
        output (NumPy's `.at` takes no others); the array is converted to and from the loop's
        types element by element."""
        if self.is_gufunc or len(self.inputs) not in (1, 2) or len(self.outputs) != 1:
            return ()
        return self.device_signatures

    @property
    def host_at_signatures(self) -> tuple[TypeSignature, ...]:
        """The loops whose `.at` runs without NumPy on the host (src/core/host_at.c): those of
        at_signatures of NumPy's own types whose first input is the output's type, so that the
        array's elements are read and written as they are stored, or, for an array of a type
        in that type's at_widened_from, converted to it and back inline."""
        return tuple(s for s in self.at_signatures
                     if s.is_numpy_builtin and s.inputs[0] == s.outputs[0])

    @property
    def element_types(self) -> tuple[ElementType, ...]:
        """Every `T` this function's bodies are compiled for, in first-use order."""
        return tuple(dict.fromkeys(s.element_type for s in self.signatures))


@dataclass(frozen=True)
class Helper:
    name: str
    prototype: str
    body: Body
    location: Location
    prototype_column: int = 8   # where the prototype starts on its line (after `helper `)
    name_location: Location | None = None


@functools.lru_cache(maxsize=None)
def _identifiers(lines: tuple[str, ...]) -> frozenset[str]:
    """The identifiers of C text, its comments and literals left out: a helper named only in
    a comment or a string is not called."""
    return frozenset(re.findall(r"\b[A-Za-z_]\w*", blank_c_noise("\n".join(lines))))


def _mentions(body: Body, helper: Helper) -> bool:
    return helper.name in _identifiers(body.lines)


@dataclass(frozen=True)
class Module:
    qualified_name: str         # "ufuncgen.examples": what pickles and `__module__` name
    sources: tuple[str, ...]    # the signature files, as written in generated banners
    helpers: tuple[Helper, ...]
    functions: tuple[Function, ...]
    warnings: tuple = ()        # Diagnostics of severity "warning", in file order

    @property
    def short_name(self) -> str:
        return self.qualified_name.rpartition(".")[2]

    @property
    def helper_instances(self) -> tuple[tuple[ElementType, tuple[Helper, ...]], ...]:
        """For each `T`, the helpers compiled for it, in file order: those whose name a body of
        that type mentions, and those the helpers so included mention, wherever they are
        defined (every helper is declared before any is defined, so helpers call each other
        in any order).  A helper is C written for a generic T, and some T it was never meant
        for would not compile (cos of an int64 on the device)."""
        instances = []
        for t in self.element_types:
            bodies = [f.body for f in self.functions if t in f.element_types]
            used = self._helpers_reached(bodies)
            if used:
                instances.append((t, tuple(h for h in self.helpers if h.name in used)))
        return tuple(instances)

    def _helpers_reached(self, bodies: list[Body]) -> set[str]:
        """The names of the helpers `bodies` mention, directly or through other helpers."""
        reached: set[str] = set()
        todo = list(bodies)
        while todo:
            body = todo.pop()
            for helper in self.helpers:
                if helper.name not in reached and _mentions(body, helper):
                    reached.add(helper.name)
                    todo.append(helper.body)
        return reached

    # The sets of functions below are derived once per module (cached_property: the module
    # is frozen), for the templates ask them of every loop.
    def _functions_whose_code(self, matches) -> frozenset[str]:
        """Functions whose body, or a helper it calls (directly or through other helpers),
        has a line of code (comments left out) for which `matches(line)` holds."""
        def has(body: Body) -> bool:
            return any(matches(line) for line in _code_lines(body))

        with_code = {h.name for h in self.helpers if has(h.body)}
        return frozenset(f.name for f in self.functions
                         if has(f.body) or self._helpers_reached([f.body]) & with_code)

    @functools.cached_property
    def vector_math_functions(self) -> frozenset[str]:
        """Functions whose body, or a helper it calls, calls a function the host loops may
        vectorize through libmvec or vecmath.h (exp, sin, hypot, erfc, ...): their loops keep
        the AVX-512 clone, whose 512-bit variants do twice the work per call
        (render.target_clones)."""
        return self._functions_whose_code(_VECTOR_MATH_CALL.search)

    @functools.cached_property
    def flag_exact_functions(self) -> frozenset[str]:
        """Functions (elementwise and gufuncs) whose vectorized loops may raise a floating-point
        flag that NumPy's scalar math would not: their body, or a helper it calls, calls a
        function the host loops may vectorize through libmvec (vecmath.h), or has a
        conditional.  Their loops get a scalar copy that re-runs any block raising an error
        (host_loops.h, ufg_run_block; host_threads.h, ufg_gufunc_run).  Not a gufunc whose body
        reads a core output before it assigns it (Function.reads_core_outputs_first): a re-run
        would add to what its first run wrote; its flags stay its vector run's."""
        raising = self._functions_whose_code(
            lambda line: _VECTOR_MATH_CALL.search(line) or _CONDITIONAL.search(line))
        return frozenset(f.name for f in self.functions
                         if f.name in raising and not f.reads_core_outputs_first)

    @functools.cached_property
    def special_kernel_flags(self) -> dict[str, tuple[str, ...]]:
        """Elementwise functions, not fast math, whose body itself calls exp or log, each with
        the floating-point flags (fp_errors.h) after which their loops of real types
        (render.special_kernel) run a second kernel: exp's underflow, log's divide-by-zero.
        That kernel is compiled from a `_special` copy of the body (bodies.h.j2) whose exp and
        log compute inline the arguments libmvec computes lane by lane through scalar libm (an
        exp that rounds to +0, a log of +-0: prelude.h, ufg_exp_f_special; host_loops.h,
        ufg_run_chosen).  Flag-exact, as every body calling vector math.  A helper keeps the
        one variant."""
        flags = {}
        for f in self.functions:
            if f.is_gufunc or f.fastmath or f.name not in self.flag_exact_functions:
                continue
            called = {m[1] for line in _code_lines(f.body)
                      for m in _SPECIAL_ARGUMENT_CALL.finditer(line)}
            if called:
                flags[f.name] = tuple(_SPECIAL_ARGUMENT_CALLS[name] for name in sorted(called))
        return flags

    @functools.cached_property
    def data_loop_functions(self) -> frozenset[str]:
        """Elementwise functions whose body, or a helper it calls, has a loop whose trip count
        the data decides (`while (e > 0)`): their loop over elements stays scalar, and
        runs a few elements an iteration (render.kernel_unroll)."""
        looping = self._functions_whose_code(_DATA_LOOP.search)
        return frozenset(f.name for f in self.functions if f.name in looping and not f.is_gufunc)

    @functools.cached_property
    def guarded_functions(self) -> frozenset[str]:
        """Flag-exact functions whose body, or a helper it calls, has a conditional: their
        vectorized loops may compute a guarded operation on lanes the guard turned off
        (`x < -700 ? 0 : exp(x)`), so a block raising underflow re-runs too (fp_errors.h).
        Elsewhere an underflow is an element's own, and a re-run would cost scalar libm's speed
        on every block of data that underflows."""
        guarded = self._functions_whose_code(_CONDITIONAL.search)
        return frozenset(name for name in self.flag_exact_functions if name in guarded)

    @functools.cached_property
    def scalar_body_functions(self) -> frozenset[str]:
        """Elementwise functions whose body itself calls a prelude function with a variant for
        scalar code (hypot): their host loops' scalar code (the in-order chains of
        host_reduce_impl.h, the scalar copy of the kernel) calls a `_scalar` copy of the body,
        compiled with that variant (bodies.h.j2).  A helper keeps the one variant."""
        return frozenset(f.name for f in self.functions if not f.is_gufunc and any(
            _SCALAR_VARIANT_CALL.search(line) for line in _code_lines(f.body)))

    @functools.cached_property
    def complex_product_functions(self) -> frozenset[str]:
        """Functions with a complex element type whose body, or a helper it calls, multiplies
        or divides (a `*` or `/` outside comments, a pointer's star included): GCC 12 may fuse
        a complex product in their vectorized loops, so those loops get no FMA clone
        (render.target_clones).  abs, exp, real, imag and conj multiply no complex values."""
        multiplying = self._functions_whose_code(re.compile(r"[*/]").search)
        return frozenset(f.name for f in self.functions if f.name in multiplying
                         and any(sig.has_complex for sig in f.signatures))

    @property
    def element_types(self) -> tuple[ElementType, ...]:
        """Every `T` any body or helper is compiled for."""
        return tuple(dict.fromkeys(t for f in self.functions for t in f.element_types))


# --------------------------------------------------------------------------- validation

class _Validator:
    def __init__(self, sink: DiagnosticSink, display_path: str):
        self.sink = sink
        self.display_path = display_path

    def error(self, where: Location | Token, message: str) -> None:
        self.sink.error(where.location if isinstance(where, Token) else where, message)

    def check_name(self, tok: Token, what: str) -> bool:
        name = tok.text
        # A function's own name reaches C only inside generated names (ufg_body_NAME_float32),
        # so C's keywords and the prelude's names are free for it (`ufunc clamp(...)`).
        reason = (reserved_reason(name) if what != "function name" or keyword.iskeyword(name)
                  else next((r for p, r in RESERVED_PREFIXES if p.match(name)), None))
        if not _IDENTIFIER.match(name):
            if name.isidentifier():     # a Python identifier outside ASCII: café
                self.error(tok, f"{what} '{name}' is not ASCII: names take ASCII letters, "
                                f"digits and '_' (C and Python identifiers alike)")
            else:
                self.error(tok, f"{what} '{name}' is not a valid C and Python identifier")
        elif what == "argument name" and name in CALL_PARAMETERS:
            self.error(tok, f"{what} '{name}' is a parameter of every call, method or stub "
                            f"({', '.join(CALL_PARAMETERS)}): rename the argument")
        elif reason is not None:
            self.error(tok, f"{what} '{name}' {reason}")
        elif what == "helper name" and name in PRELUDE_FUNCTIONS:
            self.error(tok, f"{what} '{name}' is a function of ufuncgen's prelude of body "
                            f"functions: a helper of that name would hide it")
        elif what == "helper name" and name in GCC_ATTRIBUTES:
            self.error(tok, f"{what} '{name}' is an attribute the generated code gives "
                            f"(__attribute__(({name}))): a helper of that name would rewrite it")
        else:
            return True
        return False

    def body(self, raw_body) -> Body:
        for line, col, message in c_balance_problems(raw_body.lines, raw_body.first_line):
            self.error(self.sink.at(raw_body.first_line + line, col), message)
        for line, col, directive in _header_inclusions(raw_body.lines):
            self.error(self.sink.at(raw_body.first_line + line, col),
                       f"a body cannot '#{directive}' a header: it is pasted inside a "
                       "generated C function, and compiled by nvcc for the GPU too, where a "
                       "header's declarations break the build; every body already has what "
                       "ufuncgen's prelude includes (<math.h>, <stdint.h>, <string.h>, complex "
                       "numbers) and the names a body can call (abs, min, max, pow, PI, ...); "
                       "write code of your own as a helper")
        clean = blank_c_noise("\n".join(raw_body.lines))
        for offset, _, message in cxx_incompatible_words(clean):
            line, col = _line_and_column(clean, offset)
            self.error(self.sink.at(raw_body.first_line + line, col), message)
        return Body(self.display_path, raw_body.first_line, raw_body.lines)

    # -- functions ---------------------------------------------------------------

    def function(self, raw: RawFunction) -> Function | None:
        ok = self.check_name(raw.name, "function name")
        ok &= self._check_arg_names(raw)
        signatures = self._signatures(raw)
        ok &= signatures is not None
        layout, core = self._layout(raw)
        ok &= core is not None
        identity = self._identity(raw, signatures or ())
        fastmath = self._flag(raw.fastmath, "fastmath")
        threads = self._flag(raw.threads, "threads", default=True)
        associative = self._associative(raw, signatures or ())
        if raw.body is None:
            self.error(raw.name, f"function '{raw.name.text}' has no body: expected a line "
                                 "holding only '{' after its options")
            ok = False
        if raw.body is not None:
            nin = len(raw.args)
            stored = [t.text for k, t in enumerate(raw.outputs) if not core or not core[nin + k]]
            ok &= not stored or self._check_no_return(raw, stored)
        if signatures and core:
            ok &= self._check_core_outputs_stored_as_c_types(raw, signatures, core)
        specializations = self._specializations(raw, layout) if core is not None else ()
        if not ok or specializations is None or identity is False or fastmath is None or threads is None or associative is None:
            return None
        nin = len(raw.args)
        args, stride = [], 0
        for i, tok in enumerate(raw.args + raw.outputs):
            dims = core[i] if core else ()
            args.append(Arg(tok.text, i, i >= nin, dims, stride, tok.location))
            stride += len(dims)
        args = tuple(args)
        return Function(
            name=raw.name.text, kind=raw.kind.text, doc=textwrap.dedent("\n".join(raw.doc)),
            inputs=args[:nin], outputs=args[nin:], signatures=signatures, layout=layout,
            identity=identity, fastmath=fastmath, body=self.body(raw.body),
            location=raw.name.location, threads=threads, associative=associative,
            specializations=specializations,
        )

    def _check_no_return(self, raw: RawFunction, stored: list[str]) -> bool:
        """The generated code stores a body's scalar outputs (`stored`) after the body's last
        line: a `return` would skip the stores and hand NumPy whatever the memory held."""
        text = blank_c_noise("\n".join(raw.body.lines))
        for n, line in enumerate(text.split("\n")):
            m = re.search(r"\breturn\b", line)
            # A directive's `return` is no statement, except in a macro the body expands.
            if m and (not line.lstrip().startswith("#") or _DEFINE_LINE.match(line)):
                self.error(self.sink.at(raw.body.first_line + n, m.start() + 1),
                           f"a function body cannot 'return': "
                           f"{_count(len(stored), 'output')[2:]} "
                           f"{' and '.join(repr(name) for name in stored)} "
                           f"{'is' if len(stored) == 1 else 'are'} stored after the body's last "
                           f"line, which a return would skip; leave a loop with 'break', or jump "
                           f"to a label on the body's last line ('goto done;' ... 'done:;'), "
                           f"declaring before the goto any variable initialised between it and "
                           f"the label (C++, nvcc, refuses a jump past an initialisation), or "
                           f"putting that code in a block of its own, {{ ... }}")
                return False
        return True

    def _check_arg_names(self, raw: RawFunction) -> bool:
        ok = True
        seen: set[str] = set()
        for tok in raw.args + raw.outputs:
            ok &= self.check_name(tok, "output name" if tok in raw.outputs else "argument name")
            if tok.text in seen:
                self.error(tok, f"duplicate argument name '{tok.text}' in '{raw.name.text}'")
                ok = False
            seen.add(tok.text)
        if len(raw.args) + len(raw.outputs) > MAX_ARGS:
            self.error(raw.name, f"'{raw.name.text}' has {len(raw.args) + len(raw.outputs)} "
                                 f"arguments and outputs; at most {MAX_ARGS} are supported "
                                 f"(ufuncgen's loops take {UFG_MAX_ARGS}, NumPy {NPY_MAXARGS})")
            ok = False
        return ok

    def _signatures(self, raw: RawFunction) -> tuple[TypeSignature, ...] | None:
        if not raw.types:
            if "types" in raw.broken:
                return None   # its line is already reported
            self.error(raw.name, f"function '{raw.name.text}' has no type signatures: add a line "
                                 "such as 'types: float64(float64, float64)'")
            return None
        ok = True
        result: list[TypeSignature] = []
        first_seen: dict[tuple[str, ...], Location] = {}
        arg_list = ", ".join(t.text for t in raw.args)
        for sig in raw.types:
            types = [self._element_type(tok) for tok in sig.outputs + sig.inputs]
            if None in types:
                ok = False
                continue
            outputs, inputs = tuple(types[:len(sig.outputs)]), tuple(types[len(sig.outputs):])
            if len(inputs) != len(raw.args):
                self.error(sig.location,
                           f"type signature {sig.text} has {_count(len(inputs), 'input type')}, but "
                           f"'{raw.name.text}' takes {_count(len(raw.args), 'argument')} ({arg_list})")
                ok = False
                continue
            if len(outputs) != len(raw.outputs):
                self.error(sig.location,
                           f"type signature {sig.text} has {_count(len(outputs), 'output type')}, but "
                           f"'{raw.name.text}' has {_count(len(raw.outputs), 'output')} "
                           f"({', '.join(t.text for t in raw.outputs)})")
                ok = False
                continue
            key = tuple(t.name for t in inputs)
            if key in first_seen:
                self.error(sig.location,
                           f"duplicate type signature {sig.text}: inputs "
                           f"({', '.join(key)}) already have a loop, given at "
                           f"line {first_seen[key].line}")
                ok = False
                continue
            first_seen[key] = sig.location
            result.append(TypeSignature(inputs, outputs, sig.location))
        return tuple(result) if ok else None

    def _check_core_outputs_stored_as_c_types(self, raw: RawFunction, signatures, core) -> bool:
        """A body writes a core output's elements as C lvalues (`c(i, j) = ...`), which a
        float16 element (a half's bits, computed on as float) cannot be."""
        ok = True
        nin = len(raw.args)
        for sig in signatures:
            for j, tok in enumerate(raw.outputs):
                t = sig.outputs[j]
                if core[nin + j] and t.converts:
                    index = ", ".join(d.name for d in core[nin + j])
                    self.error(sig.location,
                               f"type signature {sig.text}: output '{tok.text}' has core "
                               f"dimensions and type {t.name}; a body writes core elements as "
                               f"C lvalues ({tok.text}({index}) = ...), and a {t.name} element is "
                               f"not the {t.c_type} a body computes in (it is converted on "
                               f"the way in and out); give '{tok.text}' float32 or float64 "
                               f"({t.name} is supported for core inputs and for outputs "
                               "without core dimensions)")
                    ok = False
        return ok

    def _element_type(self, tok: Token) -> ElementType | None:
        t = ELEMENT_TYPES.get(tok.text)
        if t is None:
            self.error(tok, f"unknown type '{tok.text}'; expected one of {', '.join(ELEMENT_TYPES)}")
        return t

    def _flag(self, tok: Token | None, what: str, default: bool = False) -> bool | None:
        if tok is None:
            return default
        value = {"true": True, "yes": True, "on": True, "false": False, "no": False,
                 "off": False}.get(tok.text.lower())
        if value is None:
            self.error(tok, f"{what} must be true or false, not '{tok.text}'")
        return value

    # -- identity ----------------------------------------------------------------

    def _is_binary_ufunc(self, raw: RawFunction, tok, what: str, why: str) -> bool:
        """Whether `raw` is a ufunc of two inputs and one output, the only kind `what` (a
        reduction setting, at `tok`) means anything for; an error there when not."""
        if raw.layout is None and len(raw.args) == 2 and len(raw.outputs) == 1:
            return True
        name = raw.name.text
        actual = ("is a gufunc" if raw.layout is not None else
                  f"has {_count(len(raw.args), 'input')} and {_count(len(raw.outputs), 'output')}")
        self.error(tok, f"{what} is only meaningful for a ufunc of two inputs and one output "
                        f"({why}); '{name}' {actual}")
        return False

    def _identity(self, raw: RawFunction, signatures) -> Identity | None | bool:
        """The identity, None when absent, False when it is in error."""
        tok = raw.identity
        if tok is None:
            return None
        name = raw.name.text
        if not self._is_binary_ufunc(raw, tok, "identity",
                                     f"it is what '{name}.reduce' starts from"):
            return False
        text = tok.text.lower()
        if text == "none":
            return Identity("reorderable", "None", "none")
        if text in ("true", "false"):
            value_kind, literal = "bool", text.capitalize()
        elif re.fullmatch(r"[+-]?[0-9]+", text):
            value_kind, literal = "int", str(_decimal(text))
        elif re.fullmatch(r"[+-]?(inf|nan)", text) or tok.kind == "number" or \
                re.fullmatch(r"[+-]?[\d.]+(e[+-]?\d+)?", text):
            value_kind, literal = "float", repr(float(text))
            if literal in ("inf", "-inf") and "inf" not in text:
                self.error(tok, f"identity {tok.text} is beyond the largest double: it would be "
                                f"{literal}; write {literal} if that is what you mean")
                return False
        else:
            self.error(tok, f"identity must be a number, inf, -inf, true, false or none, "
                            f"not '{tok.text}'")
            return False
        for sig in signatures:
            out = sig.outputs[0]
            problem = _identity_problem(value_kind, literal, out)
            if problem:
                self.error(tok, f"identity {tok.text} {problem}, but '{name}' has the type "
                                f"signature {sig.text}")
                return False
        if value_kind == "int" and not -limits.C_LONG_MAX - 1 <= int(literal) <= limits.C_LONG_MAX:
            self.error(tok, f"identity {tok.text} is beyond a C long ({-limits.C_LONG_MAX - 1} to "
                            f"{limits.C_LONG_MAX}), in which NumPy keeps an integer identity")
            return False
        return Identity("value", literal, value_kind)

    # -- associative -------------------------------------------------------------

    def _associative(self, raw: RawFunction, signatures) -> bool | None:
        """`associative: true`, checked: None when it is in error.  Reordering a reduction
        means feeding results back in as inputs, so each loop must take and give one type."""
        value = self._flag(raw.associative, "associative")
        if not value:
            return value
        tok, name = raw.associative, raw.name.text
        if not self._is_binary_ufunc(raw, tok, "associative",
                                     f"it lets '{name}.reduce' reorder its work"):
            return None
        for sig in signatures:
            if len(set(sig.all_types)) != 1:
                self.error(tok, f"associative needs every type signature to take and give one "
                                f"type, as in float64(float64, float64), but '{name}' has the "
                                f"type signature {sig.text}")
                return None
        return True

    # -- specialize --------------------------------------------------------------

    def _specializations(self, raw: RawFunction, layout: CoreLayout | None):
        """The `specialize:` lines, checked against the layout: None when one is in error."""
        if not raw.specializations:
            return ()
        name = raw.name.text
        if layout is None:
            for spec in raw.specializations:
                self.error(spec.location, f"'specialize' fixes sizes of core dimensions and is "
                                          f"only meaningful for a gufunc; '{name}' is a ufunc")
            return None
        if len(raw.specializations) > limits.MAX_SPECIALIZATIONS:
            extra = raw.specializations[limits.MAX_SPECIALIZATIONS]
            self.error(extra.location, f"'{name}' has {len(raw.specializations)} 'specialize' "
                                       f"lines; at most {limits.MAX_SPECIALIZATIONS} are "
                                       "supported (each adds a loop per type signature)")
            return None
        dims = {d.name: d for d in layout.dims}
        result: list[Specialization] = []
        seen: dict[tuple, int] = {}
        for spec in raw.specializations:
            sizes = self._specialization_sizes(layout, dims, spec)
            if sizes is None:
                return None
            key = tuple((d.index, size) for d, size in sizes)
            if key in seen:
                self.error(spec.location, f"these sizes are already specialized on line {seen[key]}")
                return None
            seen[key] = spec.location.line
            result.append(Specialization(sizes, spec.location))
        return tuple(result)

    def _specialization_sizes(self, layout: CoreLayout, dims: dict[str, CoreDim],
                              spec: RawSpecialization):
        given: dict[str, int] = {}
        for name_tok, size_tok in spec.sizes:
            dim = dims.get(name_tok.text)
            if dim is None or not dim.is_variable:
                variable = ", ".join(d.name for d in layout.variable_dims
                                     if d.size_expression is None)
                self.error(name_tok, f"'{name_tok.text}' is not a core dimension of the layout "
                                     f"{layout.text}; 'specialize' takes its named dimensions "
                                     f"({variable or 'none here'})")
                return None
            if dim.size_expression is not None:
                self.error(name_tok, f"core dimension '{dim.name}' is computed by 'dim' from "
                                     "the input dimensions; specialize those instead")
                return None
            if name_tok.text in given:
                self.error(name_tok, f"core dimension '{dim.name}' is given twice")
                return None
            if not size_tok.text.isdigit() or \
                    not 1 <= _decimal(size_tok.text) <= limits.MAX_SPECIALIZED_SIZE:
                self.error(size_tok, f"a specialized size must be a whole number from 1 to "
                                     f"{limits.MAX_SPECIALIZED_SIZE}, not '{size_tok.text}'")
                return None
            if _leading_zero(size_tok.text):
                self.error(size_tok, f"specialized size {_leading_zero(size_tok.text)}")
                return None
            given[dim.name] = int(size_tok.text)
        return tuple((d, given[d.name]) for d in layout.dims if d.name in given)

    # -- gufunc layout -----------------------------------------------------------

    def _layout(self, raw: RawFunction):
        """(CoreLayout or None, per-argument core dims or None when in error)."""
        name = raw.name.text
        if raw.kind.text == "ufunc":
            if raw.layout is not None:
                self.error(raw.layout.location, f"'{name}' is declared 'ufunc' but has a layout; "
                                                "declare it 'gufunc'")
                return None, None
            for d in raw.dims:
                self.error(d.location, "'dim' defines an output core dimension and is only "
                                       "meaningful for a gufunc")
            return None, (None if raw.dims else ())
        if raw.layout is None:
            if "layout" in raw.broken:
                return None, None   # its line is already reported
            self.error(raw.name, f"gufunc '{name}' needs a layout such as 'layout: (n)->()'")
            return None, None
        return self._core_layout(raw, raw.layout)

    def _core_layout(self, raw: RawFunction, lay: RawLayout):
        name = raw.name.text
        ok = True
        if len(lay.inputs) != len(raw.args):
            self.error(lay.location, f"layout {lay.text} has {_count(len(lay.inputs), 'input core shape')}, "
                                     f"but '{name}' takes {_count(len(raw.args), 'argument')} "
                                     f"({', '.join(t.text for t in raw.args)})")
            ok = False
        if len(lay.outputs) != len(raw.outputs):
            self.error(lay.location, f"layout {lay.text} has {_count(len(lay.outputs), 'output core shape')}, "
                                     f"but '{name}' has {_count(len(raw.outputs), 'output')} "
                                     f"({', '.join(t.text for t in raw.outputs)})")
            ok = False
        arg_names = {t.text for t in raw.args + raw.outputs}
        input_dims: set[str] = set()
        order: dict[str, Token] = {}
        for group in lay.inputs:
            for tok in group:
                input_dims.add(tok.text)
                order.setdefault(tok.text, tok)
        for group in lay.outputs:
            for tok in group:
                order.setdefault(tok.text, tok)
        for tok in order.values():
            if tok.kind == "number":
                if not tok.text.isdigit() or _decimal(tok.text) < 1:
                    self.error(tok, f"a frozen core dimension must be a positive integer, not '{tok.text}'")
                    ok = False
                elif _leading_zero(tok.text):
                    self.error(tok, f"frozen core dimension {_leading_zero(tok.text)}")
                    ok = False
                elif _decimal(tok.text) > NPY_MAX_FROZEN_SIZE:
                    self.error(tok, f"frozen core dimension {tok.text} is too large: NumPy takes "
                                    f"sizes up to {NPY_MAX_FROZEN_SIZE}")
                    ok = False
            elif not self.check_name(tok, "core dimension name"):
                ok = False
            elif tok.text in arg_names:
                self.error(tok, f"'{tok.text}' names both an argument and a core dimension of '{name}'")
                ok = False
        if len(order) > UFG_DEVICE_MAX_CORE_DIMS:
            extra = list(order.values())[UFG_DEVICE_MAX_CORE_DIMS]
            self.error(extra, f"layout {lay.text} has {len(order)} distinct core dimensions; at "
                              f"most {UFG_DEVICE_MAX_CORE_DIMS} are supported (the device kernels' "
                              f"limit), and '{extra.text}' is number {UFG_DEVICE_MAX_CORE_DIMS + 1}")
            ok = False
        total = sum(len(group) for group in lay.inputs + lay.outputs)
        if total > UFG_DEVICE_MAX_CORE_STRIDES:
            self.error(lay.location, f"layout {lay.text} has {total} core dimensions over all its "
                                     f"arguments; at most {UFG_DEVICE_MAX_CORE_STRIDES} are "
                                     "supported (one core stride each in the device kernels)")
            ok = False
        expressions = self._dim_definitions(raw.dims, input_dims, order)
        if expressions is None:   # reported; its dims count as defined, so nothing else is said of them
            ok = False
            expressions = {d.name.text: ("", "") for d in raw.dims}
        for group in lay.outputs:
            for tok in group:
                if tok.kind == "name" and tok.text not in input_dims and \
                        tok.text not in expressions and "dim" not in raw.broken:
                    self.error(tok, f"output core dimension '{tok.text}' is not given by any input; "
                                    f"define its size with a line such as 'dim: {tok.text} = n*(n-1)/2'")
                    ok = False
        if not ok:
            return None, None
        dims = {
            text: CoreDim(text, i, int(text) if tok.kind == "number" else None,
                          *expressions.get(text, (None, None)))
            for i, (text, tok) in enumerate(order.items())
        }
        core = tuple(tuple(dims[t.text] for t in group) for group in lay.inputs + lay.outputs)
        return CoreLayout(lay.text, tuple(dims.values())), core

    def _dim_definitions(self, defs: tuple[RawDimDefinition, ...], input_dims: set[str],
                         order: dict[str, Token]) -> dict[str, str] | None:
        ok = True
        result: dict[str, str] = {}
        for d in defs:
            target = d.name.text
            if target in input_dims:
                self.error(d.name, f"core dimension '{target}' is given by an input; "
                                   "'dim' defines only output-only dimensions")
                ok = False
                continue
            if target not in order:
                self.error(d.name, f"'dim' defines '{target}', which the layout does not use")
                ok = False
                continue
            if target in result:
                self.error(d.name, f"core dimension '{target}' is defined twice")
                ok = False
                continue
            bad = False
            for tok in d.expression:
                if tok.kind == "name" and tok.text not in input_dims:
                    known = ", ".join(t for t in order if t in input_dims and not t.isdigit())
                    self.error(tok, f"the size of '{target}' may use only input core dimensions "
                                    f"({known or 'none here'}); '{tok.text}' is not one")
                    bad = True
                elif tok.kind == "number" and not tok.text.isdigit():
                    self.error(tok, f"size expression takes whole numbers only, not '{tok.text}'")
                    bad = True
                elif tok.kind == "number" and _leading_zero(tok.text):
                    self.error(tok, f"number {_leading_zero(tok.text)}")
                    bad = True
                elif tok.kind in ("punct", "arrow") and tok.text not in "+-*/%()":
                    self.error(tok, f"unexpected '{tok.text}' in a size expression; "
                                    "use + - * / % and parentheses")
                    bad = True
            code = None if bad else self._size_code(d)
            if code is None:
                ok = False
                continue
            result[target] = (" ".join(t.text for t in d.expression), code)
        return result if ok else None

    def _size_code(self, d: RawDimDefinition) -> str | None:
        """A `dim:` size expression as C over the input dimensions, None when it does not parse
        (reported).  Its arithmetic goes through host_loops.h's checked ufg_dim_* functions: a
        division by zero or an overflow fails the call instead of crashing it."""
        tokens, pos = d.expression, 0
        last = d.expression[-1]
        end = Token("", dataclasses.replace(last.location, col=last.location.col + len(last.text)),
                    "end")

        def peek() -> Token:
            return tokens[pos] if pos < len(tokens) else end

        def fail(tok: Token, what: str) -> None:
            found = "the end of the expression" if tok.kind == "end" else f"'{tok.text}'"
            raise ParseError(tok.location, f"expected {what} in the size of '{d.name.text}', "
                                            f"found {found}")

        def operand(depth: int = 0) -> str:
            """`depth`: the parentheses and signs around it, each a level of this recursive
            descent (of Python's recursion limit) and of nesting in the generated C."""
            nonlocal pos
            tok = peek()
            if tok.text in ("+", "-", "(") and tok.kind == "punct" and depth >= _MAX_DIM_NESTING:
                raise ParseError(tok.location, f"the size of '{d.name.text}' nests parentheses "
                                               f"and signs more than {_MAX_DIM_NESTING} deep")
            if tok.text in ("+", "-") and tok.kind == "punct":
                pos += 1
                inner = operand(depth + 1)
                return inner if tok.text == "+" else f"ufg_dim_subtract(0, {inner}, &ufg_dim_error)"
            if tok.text == "(" and tok.kind == "punct":
                pos += 1
                inner = sum_(depth + 1)
                if peek().text != ")":
                    fail(peek(), "')'")
                pos += 1
                return f"({inner})"
            if tok.kind == "number" and _decimal(tok.text) > limits.NPY_INTP_MAX:
                raise ParseError(tok.location, f"{tok.text} in the size of '{d.name.text}' is "
                                               f"beyond the largest size, "
                                               f"{limits.NPY_INTP_MAX}")
            if tok.kind in ("name", "number"):
                pos += 1
                return f"(npy_intp){tok.text}" if tok.kind == "number" else tok.text
            fail(tok, "a dimension name, a number or '('")

        def product(depth: int) -> str:
            nonlocal pos
            code = operand(depth)
            while peek().text in ("*", "/", "%"):
                op = peek()
                pos += 1
                right = operand(depth)
                if op.text in "/%" and re.fullmatch(r"\(*\(npy_intp\)0+\)*", right):
                    raise ParseError(op.location, f"the size of '{d.name.text}' divides by zero")
                code = f"{_DIM_OPERATIONS[op.text]}({code}, {right}, &ufg_dim_error)"
            return code

        def sum_(depth: int = 0) -> str:
            nonlocal pos
            code = product(depth)
            while peek().text in ("+", "-"):
                op = peek()
                pos += 1
                code = f"{_DIM_OPERATIONS[op.text]}({code}, {product(depth)}, &ufg_dim_error)"
            return code

        try:
            code = sum_()
            if pos < len(tokens):
                fail(peek(), "an operator (+ - * / %)")
        except ParseError as exc:
            self.error(exc.location, exc.message)
            return None
        return code

    # -- helpers -----------------------------------------------------------------

    def helper(self, raw: RawHelper) -> Helper | None:
        if not self.check_name(raw.name, "helper name") or raw.body is None:
            return None
        # The prototype is pasted into generated C: it must be one balanced declarator.
        line = raw.name.location.line
        text = self.sink.lines[line - 1] if 0 < line <= len(self.sink.lines) else ""
        start = text.find(raw.prototype)
        problems = c_balance_problems([raw.prototype], line)
        for _, col, message in problems:
            self.error(self.sink.at(line, start + col), message)
        if not problems:
            for m in re.finditer(r"[{};]|/\*|//|\\|#", raw.prototype):
                self.error(self.sink.at(line, start + 1 + m.start()),
                           f"unexpected '{m.group(0)}' in the helper's prototype: write only "
                           f"'TYPE NAME(PARAMETERS)' on the 'helper' line, the body below it")
                return None
        if problems:
            return None
        words = cxx_incompatible_words(blank_c_noise(raw.prototype))
        for offset, _, message in words:
            self.error(self.sink.at(line, start + 1 + offset), message)
        if words:
            return None
        return Helper(raw.name.text, raw.prototype, self.body(raw.body), raw.location,
                      start + 1 if start >= 0 else raw.location.col + len("helper "),
                      raw.name.location)


_CLOSERS = {")": "(", "]": "[", "}": "{"}
# How deep a `dim:` size expression may nest parentheses and unary signs: far more than a size
# needs, and within C's guaranteed 63 levels of parenthesized expressions.
_MAX_DIM_NESTING = 32
# The checked arithmetic of `dim:` size expressions (host_loops.h).
_DIM_OPERATIONS = {"+": "ufg_dim_add", "-": "ufg_dim_subtract", "*": "ufg_dim_multiply",
                   "/": "ufg_dim_quotient", "%": "ufg_dim_remainder"}


def c_balance_problems(lines, first_line: int = 1) -> list[tuple[int, int, str]]:
    """(0-based line, 1-based col, message) for each bracket in C text that is never closed or
    closes nothing, and for a comment, string or character literal left open at the end: such a
    body would swallow or break the generated code around it, and the C compiler would then
    report errors in generated files instead of the user's.  Preprocessor lines are not C:
    only their conditionals are checked (#if/#ifdef/#ifndef closed by #endif in the body)."""
    problems = []
    stack: list[tuple[str, int, int]] = []
    conditionals: list[tuple[str, int, int, bool]] = []   # (#if..., line, col, seen #else)
    in_comment = None
    for n, line in enumerate(lines):
        if in_comment is None and line.lstrip().startswith("#"):
            _preprocessor_conditional(line, n, first_line, conditionals, problems)
            if line.rstrip().endswith("\\") and n == len(lines) - 1:
                problems.append((n, len(line.rstrip()), "a body's last line cannot end with '\\' "
                                 "(it would continue into generated code)"))
            continue
        i = 0
        while i < len(line):
            c = line[i]
            if in_comment is not None:
                end = line.find("*/", i)
                if end < 0:
                    break
                in_comment, i = None, end + 2
                continue
            if line.startswith("//", i):
                break
            if line.startswith("/*", i):
                in_comment, i = (n, i + 1), i + 2
                continue
            if c in "\"'":
                j = i + 1
                while j < len(line) and line[j] != c:
                    j += 2 if line[j] == "\\" else 1
                if j >= len(line):
                    what = "string" if c == '"' else "character"
                    problems.append((n, i + 1, f"unterminated {what} literal"))
                    break
                i = j + 1
                continue
            if c in "([{":
                stack.append((c, n, i + 1))
            elif c in ")]}":
                if stack and stack[-1][0] == _CLOSERS[c]:
                    stack.pop()
                else:
                    if stack:
                        problems.append((n, i + 1, f"'{c}' does not close the '{stack[-1][0]}' "
                                         f"opened at line {first_line + stack[-1][1]}, column {stack[-1][2]}"))
                    else:
                        problems.append((n, i + 1, f"'{c}' closes nothing"))
                    return problems
            i += 1
        if in_comment is None and line.endswith("\\") and n == len(lines) - 1:
            problems.append((n, len(line), "a body's last line cannot end with '\\' "
                             "(it would continue into generated code)"))
    if in_comment is not None:
        problems.append((in_comment[0], in_comment[1], "unterminated comment: '/*' is never closed by '*/'"))
    for c, n, col in stack:
        problems.append((n, col, f"'{c}' is never closed"))
    for directive, n, col, _ in conditionals:
        problems.append((n, col, f"'#{directive}' is never closed: expected '#endif' before "
                                 "the end of the body"))
    return problems


_DIRECTIVE = re.compile(r"\s*#\s*([A-Za-z_]\w*)")
# The directives that paste another file in: inside a body (a function of the generated code)
# a header's declarations fail to compile, in the system headers, where no message points at
# the signature file.
_INCLUSIONS = frozenset({"include", "include_next", "import", "embed"})


def _header_inclusions(lines) -> list[tuple[int, int, str]]:
    """(0-based line, 1-based col of the '#', directive) of each #include, #include_next,
    #import or #embed in C text; one in a comment does not count."""
    found = []
    for n, line in enumerate(blank_c_noise("\n".join(lines)).split("\n")):
        m = _DIRECTIVE.match(line)
        if m and m.group(1) in _INCLUSIONS:
            found.append((n, line.index("#") + 1, m.group(1)))
    return found


def _preprocessor_conditional(line: str, n: int, first_line: int, open_: list, problems: list) -> None:
    """Tracks #if/#ifdef/#ifndef ... #elif/#else ... #endif in one body: each must open and
    close inside it, or it would swallow (or end) conditionals of the generated code."""
    m = _DIRECTIVE.match(line)
    if not m:
        return
    directive, col = m.group(1), line.index("#") + 1
    if directive in ("if", "ifdef", "ifndef"):
        open_.append((directive, n, col, False))
    elif directive in ("elif", "else", "elifdef", "elifndef", "endif"):
        if not open_:
            problems.append((n, col, f"'#{directive}' without '#if' in this body: expected a "
                                     "matching '#if', '#ifdef' or '#ifndef' before it"))
        elif directive == "endif":
            open_.pop()
        else:
            opened, at, at_col, seen_else = open_[-1]
            if seen_else:
                problems.append((n, col, f"'#{directive}' after '#else': the '#{opened}' at "
                                         f"line {first_line + at} already has its '#else'"))
            elif directive == "else":
                open_[-1] = (opened, at, at_col, True)


# Python reads no decimal number of more than 4300 digits (int's guard against quadratic
# conversion); every limit here is far below 400 digits, so a longer number stands for one
# beyond them all: 10**400 is beyond every double too.
_BEYOND_EVERY_LIMIT = 10**400


def _decimal(text: str) -> int:
    """The value of ASCII decimal digits, maybe signed (`42`, `-7`); ±10**400 for a number of
    more than 400 digits, which every check refuses as too large."""
    if len(text.lstrip("+-").lstrip("0")) > 400:
        return -_BEYOND_EVERY_LIMIT if text.startswith("-") else _BEYOND_EVERY_LIMIT
    return int(text)


def _leading_zero(text: str) -> str | None:
    """Why a whole number of a layout, `dim:` or `specialize:` line with a leading zero is
    refused, as the end of a sentence about it; None for one without.  C reads `010` as octal
    (8) and `09` not at all, where NumPy and the checks here read decimal (`00` is 0 to all)."""
    if not text.startswith("0") or not text.strip("0"):
        return None
    return (f"{text} starts with 0, which C reads as an octal number ('010' is 8): write "
            f"{text.lstrip('0') or '0'}")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _identity_problem(value_kind: str, literal: str, out: ElementType) -> str | None:
    if value_kind == "float" and not out.is_inexact:
        return f"is not an integer ({out.name} output)"
    if value_kind == "bool":
        return None if out.kind == "b" else f"is a boolean ({out.name} output)"
    if out.is_inexact:
        # NumPy converts the identity into the loop's type when it reduces: a value that
        # rounds (0.1) is rounded as any literal is, but one that overflows would be an
        # infinity with an overflow warning, at import and in every device reduction.
        try:
            value = float(literal) if value_kind == "float" else float(int(literal))
        except OverflowError:       # an integer beyond every double
            value = None
        if value is None or (value == value and abs(value) != float("inf")
                             and out.rounds_to_infinity(value)):
            sign = "-" if literal.startswith("-") else ""
            return (f"is beyond the largest {out.name} ({out.largest:.8g}) and would round to "
                    f"{sign}inf")
        return None
    value = int(literal)
    if not out.min_value <= value <= out.max_value:
        return f"does not fit in {out.name} ({out.min_value} to {out.max_value})"
    return None


def _validate_once_per_name(v: "_Validator", raws, kind: str, first: dict[str, Location],
                            validate) -> list:
    """validate() of each raw declaration whose name is new to `first` (across files); a
    repeated name is an error pointing at the first definition."""
    validated = []
    for raw in raws:
        name = raw.name.text
        if name in first:
            v.error(raw.name, f"duplicate {kind} name '{name}' (first defined at {first[name]})")
            continue
        first[name] = raw.name.location
        result = validate(raw)
        if result:
            validated.append(result)
    return validated


# The C names the templates (templates/*.j2, and the headers' macros they call) derive from a
# function's name: `ufg_<role>_<name>` once per function, `ufg_<role>_<name>_<suffix><tail>`
# once per loop (type signature).  Two functions' names can meet through them: f's
# ufg_range_body_f_float64 is body_f's ufg_range_<cname>.  tests/gen/test_model.py checks these
# tables against the templates.
C_NAME_FUNCTION_ROLES = tuple("""
    arg_names core_dim_ids core_dim_sizes core_dims core_ndims data device_codes device_loops
    host_at_loops loops provided_loops provided_modules provided_types step_walks types
""".split())
_LAUNCHES = "accumulate at elementwise reduce reduceat scan total".split()
C_NAME_LOOP_ROLES = tuple("""
    accumulate_kernel at_kernel body broadcast_kernels contiguous_steps element exact_range
    host_at kernel loop range range_body range_contiguous range_contiguous_cores range_cores
    range_lanes range_prefetched range_widened reduce reduce_few reduce_kernel reduce_read
    reduce_host_call reduce_step reduce_write reduceat_kernel rerun scalar_kernel step_op
    strided_kernel widened_steps
""".split()) + tuple(f"launch_{where}_{kind}" for where in ("sim", "cuda") for kind in _LAUNCHES)
# The tails some roles' names take after the loop's suffix (UFG_REDUCE_NAME's parts in
# host_reduce_impl.h for `reduce`; the kernel's per-argument copies take `_broadcast_<input>`).
C_NAME_LOOP_TAILS = {
    "body": ("_scalar", "_widened"),
    "reduce": tuple("""_accumulate _combine _combine_with _few _few_f16c _few_with _fold
                       _lanes _leaf _leaf_values _load _ops _ordered _parts _push _range _short
                       _store _tree""".split()),
}


# The loops a role's names are generated for, where not every loop: a gufunc's only, or those
# of one of Function's lists of signatures.  A name that is never generated cannot clash
# (`density` beside `kernel_density`: the latter's in-order .reduce has no
# ufg_reduce_kernel_density_float64, the former's device reduction kernel's name).  Roles
# left out are taken as every loop's, which can only refuse too much.
_GUFUNC_ONLY = "gufunc"
C_NAME_LOOP_ROLE_LOOPS = {
    **{role: _GUFUNC_ONLY for role in """contiguous_steps range range_body range_contiguous
        range_contiguous_cores range_cores range_lanes range_prefetched range_widened
        widened_steps exact_range""".split()},
    **{role: "reduce_signatures" for role in """accumulate_kernel reduce_kernel reduce_read
        reduce_step reduce_write reduceat_kernel launch_sim_reduce launch_cuda_reduce
        launch_sim_reduceat launch_cuda_reduceat launch_sim_accumulate
        launch_cuda_accumulate""".split()},
    **{role: "host_reduce_signatures" for role in """reduce_few reduce_host_call step_op
        launch_sim_scan launch_cuda_scan launch_sim_total launch_cuda_total""".split()},
    "reduce": "reducing_signatures",
    **{role: "at_signatures" for role in "at_kernel launch_sim_at launch_cuda_at".split()},
    "host_at": "host_at_signatures",
}
# Roles whose names all take a tail: no name is the role and the loop alone.
_TAILED_ONLY = frozenset({"reduce"})


def _role_generated(role: str, fn: Function, sig: TypeSignature) -> bool:
    loops = C_NAME_LOOP_ROLE_LOOPS.get(role)
    if loops is None:
        return True
    if loops == _GUFUNC_ONLY:
        return fn.is_gufunc
    return sig in getattr(fn, loops)


def _c_names(fn: Function):
    """(C name, the loop's signature or None) of every name generated from `fn`'s name; the
    first of each loop is the loop's stem, `<name>_<suffix>`, as the message shows it."""
    for sig in fn.signatures:
        cname = f"{fn.name}_{sig.suffix}"
        yield cname, sig
        for role in C_NAME_LOOP_ROLES:
            if not _role_generated(role, fn, sig):
                continue
            if role not in _TAILED_ONLY:
                yield f"ufg_{role}_{cname}", sig
            for tail in C_NAME_LOOP_TAILS.get(role, ()):
                yield f"ufg_{role}_{cname}{tail}", sig
        for arg in fn.inputs:
            yield f"ufg_kernel_{cname}_broadcast_{arg.name}", sig
    for role in C_NAME_FUNCTION_ROLES:
        yield f"ufg_{role}_{fn.name}", None


def _check_c_names_distinct(functions: list[Function], sinks: dict[str, DiagnosticSink]) -> None:
    """Each loop's C names are unique within a function; two functions can still meet there
    (f's float64(int64) and f_int64_'s float64(float64) are both f_int64__float64; f's
    ufg_range_body_f_float64 is body_f's ufg_range_ of its float64 loop), and the compiler
    would report the clash in generated code: an error at the later function's name instead,
    once per function."""
    first: dict[str, tuple[Function, TypeSignature | None]] = {}
    for fn in functions:
        for cname, sig in _c_names(fn):
            other, other_sig = first.setdefault(cname, (fn, sig))
            if other is not fn:
                sinks[fn.location.path].error(
                    fn.location,
                    f"the C name of {_whose(fn, sig)} would be {cname}, as is that of "
                    f"{_whose(other, other_sig)} (declared at {other.location}): "
                    f"rename one of the two functions")
                break


def _whose(fn: Function, sig: TypeSignature | None) -> str:
    return f"'{fn.name}'" + (f" for {sig.text}" if sig is not None else "")


def build_module(qualified_name: str, files: list[tuple[RawFile, DiagnosticSink, str]]) -> Module | None:
    """Validates raw files into one Module; None when any sink holds errors."""
    functions: list[Function] = []
    helpers: list[Helper] = []
    first_function: dict[str, Location] = {}
    first_helper: dict[str, Location] = {}
    for raw, sink, display_path in files:
        v = _Validator(sink, display_path)
        if not raw.functions and not raw.helpers and not sink.diagnostics:
            v.error(sink.at(1, 1), "file declares no functions: expected a declaration "
                                   "starting with 'ufunc' or 'gufunc'")
        helpers += _validate_once_per_name(v, raw.helpers, "helper", first_helper, v.helper)
        functions += _validate_once_per_name(v, raw.functions, "function", first_function,
                                             v.function)
    if not first_function and files and not any(sink.diagnostics for _, sink, _ in files):
        first = next(((raw.helpers[0], sink) for raw, sink, _ in files if raw.helpers), None)
        if first is not None:
            helper, sink = first
            v = _Validator(sink, sink.path)
            v.error(helper.name, f"no functions are declared, only helpers: helper "
                                 f"'{helper.name.text}' is compiled only into the functions that "
                                 "call it; add a declaration starting with 'ufunc' or 'gufunc'")
    _check_c_names_distinct(functions, {path: sink for _, sink, path in files})
    if any(sink.diagnostics for _, sink, _ in files):
        return None
    module = Module(qualified_name, tuple(p for _, _, p in files), tuple(helpers), tuple(functions))
    sinks = {display_path: sink for _, sink, display_path in files}
    # The offsets of each body's integer divisions, and of its integer +, - and *, over every
    # type it is compiled for (gen/operators.py rewrites them).
    divisions: dict[int, set[int]] = {}
    arithmetic: dict[int, set[int]] = {}
    for fn in functions:
        accessors = frozenset(a.name for a in fn.args if not a.is_scalar)
        for sig in fn.signatures:
            names = {a.name: _kind(sig.all_types[a.index]) for a in fn.args}
            if fn.layout is not None:
                names.update({d.name: "i" for d in fn.layout.variable_dims})
            divisions.setdefault(id(fn.body), set()).update(
                _integer_divisions(fn.body, _kind(sig.element_type), names))
            arithmetic.setdefault(id(fn.body), set()).update(
                _integer_arithmetic(fn.body, _kind(sig.element_type), names, accessors))
            _warn_unguarded_shifts(sinks[fn.body.path], fn.body, f"function '{fn.name}'",
                                   _shift_width(sig.all_types))
            first = "first argument's" if sig.inputs else "first output's"
            _warn_fraction_cast_to_t(sinks[fn.body.path], fn.body, sig.element_type,
                                     sig.constant_type,
                                     f"in the {sig.text} loop of '{fn.name}', where T is the "
                                     f"{first} type {sig.element_type.name}")
    # A helper is compiled only into the types whose bodies call it (helper_instances): one
    # that nothing calls is never compiled, and its errors would go unseen.
    called = module._helpers_reached([fn.body for fn in functions])
    for helper in helpers:
        if helper.name not in called:
            sinks[helper.body.path].warning(
                helper.name_location or helper.location,
                f"helper '{helper.name}' is not called by any function, nor by a helper one "
                f"calls: it is not compiled, so the compiler does not check it")
    for t, used in module.helper_instances:
        for helper in used:
            names = _declared_kinds(helper.prototype, _kind(t))
            divisions.setdefault(id(helper.body), set()).update(
                _integer_divisions(helper.body, _kind(t), names))
            arithmetic.setdefault(id(helper.body), set()).update(
                _integer_arithmetic(helper.body, _kind(t), names))
            _warn_unguarded_shifts(sinks[helper.body.path], helper.body,
                                   f"helper '{helper.name}' (compiled for {t.name})",
                                   _shift_width((t,)))
            _warn_fraction_cast_to_t(sinks[helper.body.path], helper.body, t,
                                     "T" if t.is_inexact else "double",
                                     f"in helper '{helper.name}' compiled for T = {t.name}")
    functions = [dataclasses.replace(fn, body=_rewrite_operators(
        sinks[fn.body.path], fn.body, divisions.get(id(fn.body), set()),
        arithmetic.get(id(fn.body), set()), f"function '{fn.name}'")) for fn in functions]
    helpers = [dataclasses.replace(h, body=_rewrite_operators(
        sinks[h.body.path], h.body, divisions.get(id(h.body), set()),
        arithmetic.get(id(h.body), set()), f"helper '{h.name}'")) for h in helpers]
    warnings = tuple(w for _, sink, _ in files for w in sorted(
        dict.fromkeys(sink.warnings), key=lambda w: (w.location.line, w.location.col)))
    return dataclasses.replace(module, functions=tuple(functions), helpers=tuple(helpers),
                               warnings=warnings)


# --------------------------------------------------------------------------- warnings

_DIVISION = re.compile(r"(?<![/*])(/(?![/*])|%)\s*=?\s*(?P<divisor>\((?:\s*\w+\s*)\)\s*(?=\w|\()|)"
                       r"(?P<operand>[A-Za-z_]\w*|\d[\w.]*|\()?")
# ==, !=, <=, >=, <, >: not a shift (<<, >>=), nor `->`.
_COMPARISON = r"(?:[=!]=|(?<![<>-])[<>]=|(?<![<>-])[<>](?![<>=]))"


def _kind(t: ElementType) -> str:
    """'f' for a floating or complex type, 'i' for any other (bool and unsigned included)."""
    return "f" if t.is_inexact else "i"


# Simple C types by the kind of arithmetic they make: what a declaration or a cast names.
_FLOAT_C_TYPES = frozenset({"float", "double"})
_INT_C_TYPES = frozenset("""int long short char unsigned signed bool _Bool size_t ptrdiff_t
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t
    npy_intp""".split())
_QUALIFIERS = r"(?:(?:const|volatile|static|register)\s+)*"
_TYPE_WORDS = r"[A-Za-z_]\w*(?:\s+[A-Za-z_]\w*)*"
_DECLARATION = re.compile(rf"\b{_QUALIFIERS}(?P<type>{_TYPE_WORDS}?)\s*\**\s*\b(?P<name>[A-Za-z_]\w*)"
                          r"\s*(?=[=;,\[)])")
_CAST = re.compile(rf"\(\s*{_QUALIFIERS}(?P<type>{_TYPE_WORDS})\s*\)")
_NOT_OPERANDS = frozenset({"return", "if", "while", "for", "switch", "sizeof", "case", "else", "do"})


def _type_kind(words: str, t_kind: str) -> str | None:
    """The kind of a C type written as words (`T`, `const double`, `unsigned int`); None when
    it is not a simple arithmetic type."""
    words = words.split()
    if words == ["T"]:
        return t_kind
    if words and all(w in _FLOAT_C_TYPES or w == "long" for w in words) and \
            any(w in _FLOAT_C_TYPES for w in words):
        return "f"
    if words and all(w in _INT_C_TYPES for w in words):
        return "i"
    return None


def _declared_kinds(text: str, t_kind: str) -> dict[str, str]:
    """Names declared with a simple type in C text (`T acc = 0;`, `int64_t i`, `double w;`,
    each name of `int64_t pos = 0, neg = 0;`)."""
    kinds: dict[str, str | None] = {}
    for m in _DECLARATION.finditer(text):
        kind = _type_kind(m.group("type"), t_kind)
        if kind is not None:
            for name in (m.group("name"), *_more_declared_names(text, m.end("name"))):
                # Declared again with another kind (in another block): it cannot be told.
                kinds[name] = kind if kinds.get(name, kind) == kind else None
    return {name: kind for name, kind in kinds.items() if kind is not None}


def _more_declared_names(text: str, end: int) -> list[str]:
    """The names after the first of a declaration whose first name ends at text[end]: each
    `, name` or `, *name` at the declaration's depth, up to its `;` (none in a parameter
    list, where `, double b` is a declaration of its own: its `)` ends the statement)."""
    stop = _statement_end(text, end)
    if text[stop:stop + 1] not in (";", ""):
        return []
    names = []
    for comma in _top_level(text[end:stop], ","):
        m = re.match(r"\s*\**\s*([A-Za-z_]\w*)\s*(?=[=;,\[])", text[end + comma.end():])
        if m:
            names.append(m.group(1))
    return names


def _literal_kind(token: str) -> str:
    if token.lower().startswith("0x"):
        return "f" if "p" in token.lower() else "i"
    return "f" if re.search(r"[.eE]|[0-9][fF]$", token) else "i"


def _expression_kind(text: str, names: dict[str, str]) -> str | None:
    """An expression's kind by C's usual conversions: floating when any operand is, integer
    when every operand is known to be; None when it cannot tell (a call, an unknown name).
    A comparison, `&&`, `||` or `!` is an int whatever it compares, and `c ? a : b` has the
    kind of a and b whatever c is (`(x > 0 ? k : 1) / d` divides integers)."""
    if re.search(r"[A-Za-z_]\w*\s*\(", text) or any(
            _type_kind(m.group("type"), names.get("T", "i")) == "i" for m in _CAST.finditer(text)):
        return None             # a call, or a cast to an integer type, makes its own kind
    return _conditional_kind(text, names)


def _top_level(text: str, pattern: str) -> list[re.Match]:
    """The matches of `pattern` in text outside its brackets (an initializer's braces too)."""
    found, depth = [], 0
    for m in re.finditer(rf"[()\[\]{{}}]|{pattern}", text):
        if m.group(0) in "([{":
            depth += 1
        elif m.group(0) in ")]}":
            depth -= 1
        elif depth == 0:
            found.append(m)
    return found


def _combined_kind(kinds: list[str | None]) -> str | None:
    if "f" in kinds:
        return "f"
    return "i" if kinds and all(k == "i" for k in kinds) else None


def _conditional_kind(text: str, names: dict[str, str]) -> str | None:
    questions = _top_level(text, r"\?")
    if questions:
        # `c ? a : b`, its `b` perhaps another conditional: the colon that pairs with the
        # first `?` is the first top-level colon past as many `?` as colons.
        q, open_questions = questions[0].start(), 0
        for m in _top_level(text[q:], r"[?:]"):
            open_questions += 1 if m.group(0) == "?" else -1
            if open_questions == 0:
                colon = q + m.start()
                return _combined_kind([_conditional_kind(text[q + 1:colon], names),
                                       _conditional_kind(text[colon + 1:], names)])
        return None
    if _top_level(text, rf"{_COMPARISON}|&&|\|\||!(?!=)"):
        return "i"              # a truth value (`!x` is one, its operand anything)
    kinds = []
    depth_start, depth = 0, 0
    for m in re.finditer(r"[()]|[A-Za-z_]\w*|\.?\d[\w.]*", text):
        token = m.group(0)
        if token == "(":
            depth += 1
            if depth == 1:
                depth_start = m.end()
        elif token == ")":
            depth -= 1
            if depth == 0:
                inner = text[depth_start:m.start()]
                cast = _type_kind(inner, names.get("T", "i"))    # `(double)k` is floating
                kinds.append(cast if cast is not None else _conditional_kind(inner, names))
        elif depth > 0:
            continue
        elif token[0].isdigit() or token[0] == ".":
            kinds.append(_literal_kind(token))
        elif token not in _NOT_OPERANDS:
            kinds.append(names.get(token))
    return _combined_kind(kinds)


def _statement_end(text: str, start: int) -> int:
    """The index of the `;` that ends the statement going on at text[start] (len(text) if
    none), past the brackets it opens."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth < 0:
                return i
        elif text[i] == ";" and depth == 0:
            return i
    return len(text)


_BRANCH_HEAD = re.compile(r"\b(?:if|while|switch)\s*$|\belse\s*$|\bdo\s*$")


def _may_not_run(text: str, offset: int) -> bool:
    """Whether the code at text[offset] is in a branch (an `if`, `else`, `while`, `switch` or
    `do` body, a `case`, the right of `?`, `&&` or `||`) or after an early exit (`return`,
    `break`, `continue`, `goto`) at the statement's level or any level around it.  Loops over
    core dimensions (`for`) count as running."""
    start = max(text.rfind(c, 0, offset) for c in ";{}") + 1
    if re.search(r"\?|&&|\|\||\bcase\b|\bdefault\s*:", text[start:offset]):
        return True
    if re.search(r"\b(?:if|while|switch)\s*\(|\belse\b|\bdo\b", text[start:offset]):
        return True             # `for (...) if (c) y(i) = 0;`
    depth, i = 0, offset - 1
    while i >= 0:              # the blocks around it, innermost first
        c = text[i]
        if c == "}":
            depth += 1
        elif c == "{":
            if depth == 0:
                before = text[:i].rstrip()
                if before.endswith(")"):
                    k = _matching(text, len(before) - 1, -1)
                    before = text[:k].rstrip() if k >= 0 else before
                if _BRANCH_HEAD.search(before):
                    return True
            else:
                depth -= 1
        i -= 1
    return re.search(r"\b(?:return|break|continue|goto)\b", text[:offset]) is not None


def _matching(text: str, i: int, step: int) -> int:
    """The index of the bracket matching text[i] (step +1 forwards from '(', -1 backwards
    from ')'); -1 when unbalanced."""
    opening, closing = ("(", ")") if step > 0 else (")", "(")
    depth = 0
    while 0 <= i < len(text):
        if text[i] == opening:
            depth += 1
        elif text[i] == closing:
            depth -= 1
            if depth == 0:
                return i
        i += step
    return -1


_CAST_AT_END = re.compile(rf"{_CAST.pattern}\s*$")
_IDENTIFIER_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")


def _is_word_character(c: str) -> bool:
    return c.isalnum() or c == "_"      # what `\w` matches


def _name_before(text: str, end: int) -> int | None:
    r"""The start of the name that ends text[:end], whitespace aside (what
    `re.search(r"([A-Za-z_]\w*)\s*$", text[:end])` finds); None when there is none.  It reads
    back from `end` only over that whitespace and the word before it."""
    j = end
    while j > 0 and text[j - 1].isspace():
        j -= 1
    i = j
    while i > 0 and _is_word_character(text[i - 1]):
        i -= 1
    return next((p for p in range(i, j) if text[p] in _IDENTIFIER_START), None)


def _cast_before(text: str, end: int) -> re.Match | None:
    r"""The cast that ends text[:end], whitespace aside (what
    `re.search(rf"{_CAST.pattern}\s*$", text[:end])` finds), at its offsets in text.  A cast
    holds one `(`, its first character, and one `)` with only words and whitespace between:
    it reads back from `end` only over those."""
    j = end
    while j > 0 and text[j - 1].isspace():
        j -= 1
    if j == 0 or text[j - 1] != ")":
        return None
    i = j - 1
    while i > 0 and (_is_word_character(text[i - 1]) or text[i - 1].isspace()):
        i -= 1
    if i == 0 or text[i - 1] != "(":
        return None
    return _CAST_AT_END.match(text, i - 1, end)


def _operand_before(text: str, end: int, names: dict[str, str]) -> str | None:
    """The kind of the left operand of the operator at text[end]: the multiplicative chain
    before it (`a * b / c` divides a * b), each term with its casts.  It reads back from `end`
    over that chain only, never the whole text before it (a long body has an operator on
    every line)."""
    kinds = []
    while True:
        while end > 0 and text[end - 1].isspace():
            end -= 1
        if end == 0:
            break
        kind, start = None, end
        c = text[end - 1]
        if c == ")":
            k = _matching(text, end - 1, -1)
            if k < 0:
                break
            call = _name_before(text, k)
            name = None if call is None else text[call:k].rstrip()
            if name is not None and name not in _NOT_OPERANDS:
                kind, start = names.get(name), call     # x(i) of a gufunc
            else:
                kind, start = _expression_kind(text[k + 1:end - 1], names), k
        elif c.isalnum() or c in "_.":
            start = end
            while start > 0 and (_is_word_character(text[start - 1]) or text[start - 1] == "."):
                start -= 1
            token = text[start:end]
            if token in _NOT_OPERANDS:
                break
            kind = _literal_kind(token) if token[0].isdigit() or token[0] == "." else names.get(token)
        else:
            break
        while True:     # casts before the term: the outermost decides
            cast = _cast_before(text, start)
            if not cast:
                break
            cast_kind = _type_kind(cast.group("type"), names.get("T", "i"))
            if cast_kind is None and cast.group("type").split()[-1] not in names:
                break       # `(a)`, not a cast
            kind, start = cast_kind, cast.start()
        kinds.append(kind)
        j = start
        while j > 0 and text[j - 1].isspace():
            j -= 1
        if j > 1 and text[j - 1] in "*/%" and (text[j - 2].isalnum() or text[j - 2] in "_)]. "):
            end = j - 1
            continue
        break
    if "f" in kinds:
        return "f"
    return "i" if kinds and all(k == "i" for k in kinds) else None


def _operand_after(text: str, start: int, names: dict[str, str]) -> str | None:
    """The kind of the right operand starting at text[start]: its casts, then one term."""
    t_kind = names.get("T", "i")
    kind = None
    while True:
        while start < len(text) and text[start].isspace():
            start += 1
        cast = _CAST.match(text, start)
        if cast and _type_kind(cast.group("type"), t_kind) is not None:
            kind = kind or _type_kind(cast.group("type"), t_kind)
            start = cast.end()
            continue
        break
    if kind is not None:
        return kind
    if start < len(text) and text[start] == "(":
        k = _matching(text, start, 1)
        return _expression_kind(text[start + 1:k], names) if k > 0 else None
    m = re.match(r"[A-Za-z_]\w*|\.?\d[\w.]*", text[start:])
    if not m:
        return None
    token = m.group(0)
    return _literal_kind(token) if token[0].isdigit() or token[0] == "." else names.get(token)


def _integer_divisions(body: Body, t_kind: str, names: dict[str, str] | None = None) -> set[int]:
    """The offsets in the body's text of its integer `/`, `%`, `/=` and `%=` for a body
    compiled with T of kind `t_kind` ('i' or 'f') and the given names' kinds (arguments, core
    dimensions): the divisions gen/operators.py makes total.  Every `%` (C's takes integers
    only), and every `/` but those with an operand that is surely floating (a floating
    literal, a cast to a floating type, a name of a floating type: an argument, a core
    dimension, a local the body declares with one simple type; a parenthesized expression
    with one of them and no call or integer cast), or whose operands are both of unknown type
    (calls, unknown names) where T is floating.  An integer operand beside one of unknown type
    makes it an integer division: ufg_div divides floats plainly, should it be one.  A divisor
    that is a nonzero number literal (`n / 2`) cannot fail: left as written; a cast of one
    (`(T)256` is 0 in uint8) is gen/operators.py's to judge."""
    clean = blank_c_noise("\n".join(body.lines))
    kinds = {"T": t_kind, **(names or {}), **_declared_kinds(clean, t_kind)}
    found = set()
    for m in _DIVISION.finditer(clean):
        operand = m.group("operand")
        if operand and operand[0].isdigit() and not m.group("divisor") and \
                re.fullmatch(r"0+[uUlL]*|0[xX]0+[uUlL]*", operand) is None:
            continue                # a nonzero literal (or a float one), not a cast of one
        if m.group(1) == "/":       # `%` takes integers only
            left = _operand_before(clean, m.start(1), kinds)
            right = _operand_after(clean, m.end(1) + (clean[m.end(1):m.end(1) + 1] == "="), kinds)
            # A macro's parameters have no type of their own: `QQ(k, d)` may divide integers
            # in a loop whose T is floating.
            in_define = _in_define(clean, m.start(1))
            if _surely_floating(left, right, "i" if in_define else t_kind):
                continue            # a floating division: by 0 it gives inf or nan, defined
        found.add(m.start(1))
    return found


def _in_define(clean: str, offset: int) -> bool:
    """Whether text[offset] is on a `#define` line (or a line it continues with `\\`)."""
    start = clean.rfind("\n", 0, offset) + 1
    while start > 0 and clean[:start - 1].rstrip(" \t").endswith("\\"):
        start = clean.rfind("\n", 0, start - 1) + 1
    return _DEFINE_LINE.match(clean, start) is not None


def _surely_floating(left: str | None, right: str | None, t_kind: str) -> bool:
    """Whether an operation whose operands have these kinds ('f', 'i', None: unknown) is
    floating: an operand is, or T is and neither operand is known to be an integer."""
    return "f" in (left, right) or (t_kind == "f" and left is None and right is None)


def _integer_arithmetic(body: Body, t_kind: str, names: dict[str, str],
                        accessors: frozenset[str] = frozenset()) -> set[int]:
    """The offsets of the body's integer `+`, `-` (binary and unary), `*`, `+=`, `-=` and `*=`
    that gen/operators.py makes wrap in the C++ (nvcc) compile: those arithmetic_operators
    takes, of no operand surely floating by _integer_divisions' rules."""
    clean = blank_c_noise("\n".join(body.lines))
    kinds = {"T": t_kind, **names, **_declared_kinds(clean, t_kind)}
    found = set()
    for offset, unary in arithmetic_operators("\n".join(body.lines), accessors, body_names(clean)):
        width = 2 if clean[offset + 1:offset + 2] == "=" else 1
        right = _operand_after(clean, offset + width, kinds)
        left = right if unary else _operand_before(clean, offset, kinds)
        if not _surely_floating(left, right, t_kind):
            found.add(offset)
    return found


def _rewrite_operators(sink: DiagnosticSink, body: Body, divisions: set[int],
                       arithmetic: set[int], what: str) -> Body:
    """The body with its integer divisions rewritten into the prelude's total ufg_div and
    ufg_rem, and in its C++ (nvcc) text its integer +, - and * into the wrapping ufg_add,
    ufg_sub, ufg_mul and ufg_neg (gen/operators.py); a warning at each division the rewrite
    cannot follow."""
    if not divisions and not arithmetic:
        return body
    text = "\n".join(body.lines)
    clean = blank_c_noise(text)
    names = body_names(clean)
    host = rewrite_operators(text, divisions, names)
    for offset, why in host.left_alone:
        op = clean[offset] + ("=" if clean[offset + 1:offset + 2] == "=" else "")
        reason, advice = why.split("; ", 1)
        sink.warning(_body_location(body, clean, offset),
                     f"{what} divides integers ('{op}') {reason}, so it is left as written, "
                     f"where C's division by 0 and INT_MIN / -1 are undefined (on x86-64 they "
                     f"stop the process): {advice}")
    # What the wrapping rewrite cannot follow keeps nvcc's meaning: -fwrapv's elsewhere.
    device = rewrite_operators(text, divisions | arithmetic, names).code if arithmetic \
        else host.code
    return dataclasses.replace(body, code=tuple(host.code.split("\n")),
                               device_code=None if device == host.code else tuple(device.split("\n")))


def _is_tested(name: str, clean: str) -> bool:
    """Whether C text compares the name anywhere (`d != 0`, `0 < d`, `d > 1`, `s < 32`) or
    tests it (`!d`, `d ?`, `if (d)`, `&& d`): the guards the warnings look for."""
    name = re.escape(name)
    return re.search(rf"\b{name}\s*(?:{_COMPARISON}|\?)|{_COMPARISON}\s*{name}\b|!\s*{name}\b"
                     rf"|\b(?:if|while)\s*\(\s*{name}\s*\)|&&\s*{name}\b|\b{name}\s*&&",
                     clean) is not None


def _line_and_column(clean: str, offset: int) -> tuple[int, int]:
    """`offset` in a body's text (`clean` keeps its line breaks) as the line after the body's
    first one (0 for it) and the 1-based column."""
    return clean.count("\n", 0, offset), offset - (clean.rfind("\n", 0, offset) + 1) + 1


def _body_location(body: Body, clean: str, offset: int) -> Location:
    """The file location of `offset` in a body's text (`clean` keeps its line breaks)."""
    line, col = _line_and_column(clean, offset)
    return Location(body.path, body.first_line + line, col)


_SHIFT = re.compile(r"(?<![<>])(<<|>>)(?![<>])\s*=?\s*(?:\((?:\s*\w+\s*)\)\s*(?=\w|\())?"
                    r"(?P<operand>[A-Za-z_]\w*|\d\w*|\()?")


def _c_integer(token: str) -> int | None:
    """The value of a C integer literal (`31`, `0x1f`, `037`, `31u`); None for anything else."""
    digits = token.rstrip("uUlL")
    for pattern, base in ((r"0[xX][0-9a-fA-F]+", 16), (r"0[0-7]*", 8), (r"[1-9][0-9]*", 10)):
        if re.fullmatch(pattern, digits):
            return int(digits, base)
    return None


def _shift_width(types) -> int:
    """The width in bits below which a literal shift count passes without a warning: of the
    widest integer type among `types`, at least 32 (narrower operands are promoted to int)."""
    return max([32] + [8 * t.itemsize for t in types if not t.is_inexact])


def _warn_unguarded_shifts(sink: DiagnosticSink, body: Body, what: str, width: int) -> None:
    """The shift heuristic (README, "Shifts"): C leaves a shift undefined when its count is
    negative or not below the width of the promoted left operand, and x86 answers differently
    in vector code (0, or -1 for a negative value shifted right) and in scalar code (the
    count masked to its low bits), so the result depends on where an element sits in the
    array.  Each `<<`, `>>`, `<<=`, `>>=` warns whose count is neither a number literal below
    `width` nor a name the body compares or tests (`s < 32 ? x << s : 0`); a count that is any
    other expression needs some comparison in the body, or a mask `(... & 31)` below the
    width."""
    clean = blank_c_noise("\n".join(body.lines))
    any_comparison = re.search(_COMPARISON, clean)
    for m in _SHIFT.finditer(clean):
        operand = m.group("operand")
        if operand and operand[0].isdigit():
            value = _c_integer(operand)
            if value is not None and value < width:
                continue
            count = f"{operand}, not below {width} bits"
        elif operand and operand != "(":
            if _is_tested(operand, clean):
                continue
            count = f"'{operand}' that the body never compares"
        else:
            start = m.start("operand") if operand else -1
            end = _matching(clean, start, 1) if operand else -1
            mask = re.search(r"&\s*(\w+)\s*$", clean[start + 1:end]) if end > 0 else None
            mask = _c_integer(mask.group(1)) if mask else None
            if any_comparison or (mask is not None and mask < width):
                continue
            count = "an expression, and the body compares nothing"
        op = m.group(1) + ("=" if clean[m.end(1):m.end(1) + 1] == "=" else "")
        sink.warning(_body_location(body, clean, m.start()),
                     f"{what} shifts ('{op}') by {count}: a shift "
                     f"by a negative count, or by the width of the promoted left operand or more "
                     f"(64 for int64, 32 for int32 and narrower types), is undefined behaviour "
                     f"in C and gives different results in different elements; guard it")


_FRACTION_CAST_TO_T = re.compile(
    r"(?<![\w)\]])\(\s*T\s*\)\s*(?P<sign>[-+]?)\s*"
    r"(?P<literal>(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][-+]?\d+"
    r"|(?:\d+\.\d*|\.\d+)(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)[fFlL]?)(?![\w.])")


def _warn_fraction_cast_to_t(sink: DiagnosticSink, body: Body, t: ElementType,
                             constant_type: str, where: str) -> None:
    """A floating literal with a fractional part cast to T (`(T)0.5`, `(T)2.5e-1`) where T is
    an integer or bool: the README's advice for constants in floating loops truncates there
    (0, or true), in a mixed signature such as float64(int64, float64) whose T is the first
    argument's type.  `where` says which loop; `constant_type` is the loop's floating type
    (UFG_CONSTANT_T), which the advice names."""
    if t.is_inexact:
        return
    clean = blank_c_noise("\n".join(body.lines))
    for m in _FRACTION_CAST_TO_T.finditer(clean):
        literal = m.group("literal")
        digits = literal.rstrip("fFlL")
        try:
            value = float.fromhex(digits) if digits[:2].lower() == "0x" else float(digits)
        except ValueError:
            continue
        if m.group("sign") == "-":
            value = -value
        if value != value or value in (float("inf"), float("-inf")) or value.is_integer():
            continue
        if t.name == "bool":
            result = "true"
        elif t.min_value <= int(value) <= t.max_value:
            result = str(int(value))
        else:
            result = f"undefined (outside {t.name}'s range)"
        number = m.group("sign").replace("+", "") + digits
        bare = f"{number}f" if constant_type == "float" else number
        sink.warning(_body_location(body, clean, m.start()),
                     f"'{m.group(0)}' is {result} {where}; write "
                     f"({constant_type}){number} or {bare}")
