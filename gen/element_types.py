"""The element types a signature file may name, and what each one is in C and NumPy.

Every type is one row of data; the rest of the generator looks things up here and
never spells a C type or a NumPy type number itself.
"""
from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class ElementType:
    name: str          # the spelling in signature files and in NumPy: "float32"
    c_type: str        # the C type a body sees and computes in: "float"
    npy_enum: str | None  # NumPy's type number, "NPY_FLOAT32"; None for a dtype that another
                          # package registers with NumPy at run time (dtype_module)
    itemsize: int
    kind: str          # "b" bool, "i" signed, "u" unsigned, "f" floating, "c" complex
    min_value: int | None = None   # integer range, for checking identities
    max_value: int | None = None
    # A type stored in memory as something other than c_type (float16: the bits of an IEEE
    # half in a uint16_t, computed on as float, as NumPy's own float16 loops do): the storage
    # C type and the prelude's functions converting to and from c_type, with round to
    # nearest even.  None for the types a body sees as they are stored.
    storage: str | None = None
    load: str | None = None
    store: str | None = None
    # The runtime's functions converting n elements at a time (ufuncgen/half_blocks.h), for
    # a type whose element-at-a-time conversions cost more than the arithmetic around them
    # (float16: F16C converts eight at once); None where loops convert element by element.
    load_block: str | None = None
    store_block: str | None = None
    # The same one element at a time, in code compiled for F16C (x86-64 CPUs with AVX2), for
    # the scalar loops that convert each element (a short row's reduction); None elsewhere.
    load_f16c: str | None = None
    store_f16c: str | None = None
    # The prelude's functions converting to and from double instead, for an output of a body
    # that computes in double (held_in_double): float16 rounds a double once (through float it
    # would round twice).  None where a double goes through float, as for bfloat16, whose
    # ml_dtypes casts from float64 round to float32 first.
    double_load: str | None = None
    double_store: str | None = None
    # The Python module whose import registers the dtype with NumPy (np.dtype(name) works
    # after it), for the types NumPy has no number of its own for: "ml_dtypes".
    dtype_module: str | None = None
    # A floating or complex type's largest finite value (a complex type's parts'), and how a
    # Python float (an identity) becomes an element, as NumPy converts it: rounded to nearest
    # even into struct's format `round_format` ("e" IEEE half, "f" float, "d" double), then for
    # bfloat16 to the top `kept_bits` of that float, as ml_dtypes converts.  None for the others.
    largest: float | None = None
    round_format: str | None = None
    kept_bits: int | None = None
    # The narrower types whose arrays a host `.at` of a loop of this type updates in place,
    # each element converted to this type and back inline (ufuncgen/host_at_convert.h), where
    # NumPy resolves that loop for them (a float32 array with a Python float: float64).  Only
    # pairs whose conversions NumPy makes exactly so, flags included; () for the others.
    at_widened_from: tuple[str, ...] = ()

    @property
    def is_numpy_builtin(self) -> bool:
        """One of NumPy's own types: registered with the ufunc itself, and held by device
        arrays.  The others' loops are added when their dtype_module can be imported."""
        return self.npy_enum is not None

    @property
    def at_widened_from_types(self) -> tuple["ElementType", ...]:
        """at_widened_from, as element types."""
        return tuple(ELEMENT_TYPES[name] for name in self.at_widened_from)

    @property
    def is_integer(self) -> bool:
        return self.kind in "iu"

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def is_inexact(self) -> bool:
        """Floating or complex: division by zero gives Inf or NaN, literals may have a point."""
        return self.kind in "fc"

    @property
    def storage_type(self) -> str:
        """The C type of an element in memory."""
        return self.storage or self.c_type

    @property
    def converts(self) -> bool:
        """Whether loops convert elements on the way in and out of a body."""
        return self.storage is not None

    def rounds_to_infinity(self, value: float) -> bool:
        """Whether the finite `value` becomes an infinity as an element of this floating or
        complex type (NumPy's own overflow, "overflow encountered in cast")."""
        try:
            packed = struct.pack("<" + self.round_format, value)
        except OverflowError:       # struct refuses what would round to an infinity
            return True
        if self.kept_bits is None:
            return False
        bits = int.from_bytes(packed, "little")
        dropped = 8 * len(packed) - self.kept_bits
        kept = (bits + (1 << (dropped - 1)) - 1 + ((bits >> dropped) & 1)) >> dropped
        exponent = 0x7F80 >> (16 - self.kept_bits)          # bfloat16's, all ones: Inf
        return (kept & exponent) == exponent

    @property
    def is_double(self) -> bool:
        """float64, or complex128 (two doubles): C computes in double wherever it meets one."""
        return "double" in (self.c_type, self.component_type)

    @property
    def held_in_double(self) -> "ElementType":
        """This type as an output of a body that computes in double (TypeSignature.body_types):
        float16 is then held in a double and rounded to float16 once, when stored, with no block
        conversions (the element-by-element one vectorizes); the other types as they are."""
        if self.double_store is None:
            return self
        return dataclasses.replace(self, c_type="double", load=self.double_load,
                                   store=self.double_store, load_block=None, store_block=None,
                                   load_f16c=None, store_f16c=None)

    @property
    def widened(self) -> "ElementType":
        """The type a body computes this one in, as stored: float32 for float16 and bfloat16
        (their C type is float), the type itself otherwise."""
        return ELEMENT_TYPES["float32"] if self.converts else self

    @property
    def access(self) -> str:
        """How the runtime's cast kernel reads and writes the type, as a C token: the NumPy
        kind, 'h' for half storage, 'bf' for bfloat16 storage."""
        return {"ufg_half": "h", "ufg_bfloat16": "bf"}.get(self.storage, self.kind)

    @property
    def component_type(self) -> str | None:
        """The C type of a complex element's two parts (real, then imaginary); None for the
        other types."""
        return {"ufg_complex64": "float", "ufg_complex128": "double"}.get(self.c_type)


def _int(name: str, c_type: str, bits: int, signed: bool, **fields) -> ElementType:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return ElementType(name, c_type, "NPY_" + name.upper(), bits // 8, "i" if signed else "u", lo, hi,
                       **fields)


ELEMENT_TYPES: dict[str, ElementType] = {
    t.name: t
    for t in (
        ElementType("bool", "bool", "NPY_BOOL", 1, "b", 0, 1),
        _int("int8", "int8_t", 8, True),
        _int("int16", "int16_t", 16, True),
        _int("int32", "int32_t", 32, True),
        _int("int64", "int64_t", 64, True,
             at_widened_from=("int8", "uint8", "int16", "uint16", "int32", "uint32")),
        _int("uint8", "uint8_t", 8, False),
        _int("uint16", "uint16_t", 16, False),
        _int("uint32", "uint32_t", 32, False),
        _int("uint64", "uint64_t", 64, False),
        ElementType("float16", "float", "NPY_FLOAT16", 2, "f", storage="ufg_half",
                    load="ufg_half_to_float", store="ufg_float_to_half",
                    load_block="ufg_halves_to_floats", store_block="ufg_floats_to_halves",
                    load_f16c="ufg_half_to_float_f16c", store_f16c="ufg_float_to_half_f16c",
                    double_load="ufg_half_to_double", double_store="ufg_double_to_half",
                    largest=65504.0, round_format="e"),
        # ml_dtypes' bfloat16 (the top half of a float32), stored as its bits and computed on
        # as float, as ml_dtypes' own loops do.
        ElementType("bfloat16", "float", None, 2, "f", storage="ufg_bfloat16",
                    load="ufg_bfloat16_to_float", store="ufg_float_to_bfloat16",
                    dtype_module="ml_dtypes",
                    largest=3.3895313892515355e38, round_format="f", kept_bits=16),
        ElementType("float32", "float", "NPY_FLOAT32", 4, "f",
                    largest=3.4028234663852886e38, round_format="f",
                    at_widened_from=("float16",)),
        ElementType("float64", "double", "NPY_FLOAT64", 8, "f",
                    largest=1.7976931348623157e308, round_format="d",
                    at_widened_from=("float32", "float16")),
        # Two floats, real then imaginary, as NumPy stores them: C99's float _Complex in C,
        # the prelude's ufg_complex<float> in CUDA C++ (ufuncgen/complex.h).
        ElementType("complex64", "ufg_complex64", "NPY_COMPLEX64", 8, "c",
                    largest=3.4028234663852886e38, round_format="f"),
        ElementType("complex128", "ufg_complex128", "NPY_COMPLEX128", 16, "c",
                    largest=1.7976931348623157e308, round_format="d"),
    )
}

# NumPy's own types, in the same order: the ones a ufunc is created with.
NUMPY_ELEMENT_TYPES: dict[str, ElementType] = {
    name: t for name, t in ELEMENT_TYPES.items() if t.is_numpy_builtin}

# The types device arrays hold, in the order of the runtime's dtype codes: NumPy's own, then
# the provided ones (bfloat16), so that adding a provided type leaves the others' codes alone.
DEVICE_ELEMENT_TYPES: dict[str, ElementType] = {
    **NUMPY_ELEMENT_TYPES,
    **{name: t for name, t in ELEMENT_TYPES.items() if not t.is_numpy_builtin}}
