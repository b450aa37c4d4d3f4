"""The limits every part of ufuncgen shares: written here once, checked by the generator at
`ufuncgen check`, and emitted as C (`python -m ufuncgen.gen runtime-headers`, the header
ufuncgen/limits.h) for the host loops, the device kernels and the runtime.
"""
from __future__ import annotations

# Inputs + outputs of one function: the host loop driver keeps one block buffer per argument.
MAX_ARGS = 16
# NumPy 2's operands of one ufunc call (NumPy's own limit, not emitted).
NPY_MAXARGS = 64
# Dimensions a device launch takes after the runtime merges contiguous ones: the kernel
# parameters are passed by value and must stay under CUDA's 4 KiB parameter limit.
DEVICE_MAX_DIMS = 12
# Arguments of a device launch: inputs + outputs + the where= mask.
DEVICE_MAX_ARGS = MAX_ARGS + 1
# A gufunc's distinct variable core dimensions, and its core strides (one per core dimension
# of each argument), as the device kernel parameters hold them.
DEVICE_MAX_CORE_DIMS = 16
DEVICE_MAX_CORE_STRIDES = 48
# `specialize:` lines of one gufunc: each adds a host loop per type signature and CPU clone.
MAX_SPECIALIZATIONS = 8
# The largest size a `specialize:` line may fix: a constant trip count helps small loops only.
MAX_SPECIALIZED_SIZE = 1024

# The largest npy_intp (a 64-bit platform's): `dim:` sizes and their numbers stay within it.
NPY_INTP_MAX = 2**63 - 1
# NumPy keeps an integer identity as a C long (64 bits on Linux): a larger one fails to import.
C_LONG_MAX = 2**63 - 1

# (C macro, value, why): the rows of ufuncgen/limits.h, in order.
C_LIMITS: tuple[tuple[str, int, str], ...] = (
    ("UFG_MAX_ARGS", MAX_ARGS, "inputs + outputs of a function (the host loop driver's buffers)"),
    ("UFG_DEVICE_MAX_DIMS", DEVICE_MAX_DIMS,
     "dimensions left after the runtime merges contiguous ones; more is refused before launch"),
    ("UFG_DEVICE_MAX_ARGS", DEVICE_MAX_ARGS, "inputs + outputs + the where= mask"),
    ("UFG_DEVICE_MAX_CORE_DIMS", DEVICE_MAX_CORE_DIMS, "a gufunc's variable core dimensions"),
    ("UFG_DEVICE_MAX_CORE_STRIDES", DEVICE_MAX_CORE_STRIDES,
     "core strides of a gufunc: one per core dimension of each argument"),
)
