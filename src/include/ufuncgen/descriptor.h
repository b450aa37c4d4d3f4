/*
 * A generated function's descriptor: everything about one function, as one row of constant
 * data that the generator emits (templates/module.c.j2) and every consumer reads.  Host
 * registration builds the np.ufunc from it (register.h); ufuncgen.Function keeps a pointer to
 * it; the device call (src/device/call/) reads argument names, the core layout and the
 * launchers from it.  Nothing about a function is parsed back out of strings.
 */
#ifndef UFUNCGEN_DESCRIPTOR_H
#define UFUNCGEN_DESCRIPTOR_H

#include <Python.h>
#include <numpy/ndarraytypes.h>
#include <numpy/ufuncobject.h>

#include "ufuncgen/device_kernel.h"

/* Flags of a function (signature-file options). */
#define UFG_FN_ASSOCIATIVE 0x1u     /* `associative: true`: .reduce may reorder */
#define UFG_FN_THREADS 0x2u         /* large host calls may run on several threads */
#define UFG_FN_FASTMATH 0x4u        /* `fastmath: true` */

/* A core dimension that is not frozen: its size comes from the operands (or, for an
 * output-only dimension, from process_core_dims). */
#define UFG_CORE_DIM_VARIABLE (-1)

/* A loop's `.at` on the host, for an array of type a_type: the loop's first input type (which is
 * also its output's), or a narrower one whose elements it converts to that type and back
 * (ufuncgen/host_at_convert.h): for i < n in order, a[index[i]] = f(a[index[i]], b[i]), each
 * index an npy_intp in -a_length..a_length-1 (src/core/host_at.c checks them first), b of the
 * loop's second input type (unused by a unary function).  Steps in bytes.  0, or -1, with
 * nothing done, for an a_type it does not update (n 0 asks which it does). */
typedef int (*ufg_host_at_loop)(int a_type, char *a, npy_intp a_step, npy_intp a_length,
                                const char *index, npy_intp index_step, const char *b,
                                npy_intp b_step, npy_intp n);

typedef struct ufg_function_descriptor {
    const char *name;
    const char *doc;                /* the wrapper's docstring: call signature, text, types */
    const char *ufunc_doc;          /* the bare ufunc's: text and types */
    int nin, nout, ntypes;
    const char *const *arg_names;   /* nin + nout names: inputs, then outputs */
    unsigned flags;                 /* UFG_FN_* */

    /* The host loops, as NumPy registers them. */
    PyUFuncGenericFunction *loops;
    void **data;
    const char *types;              /* ntypes * (nin + nout) NumPy type numbers */
    const ufg_host_at_loop *host_at_loops;  /* per loop, its .at, or NULL (none at all: NULL) */

    /* Identity: PyUFunc_None, PyUFunc_ReorderableNone or PyUFunc_IdentityValue with a value
     * of kind 'i', 'f' or 'b' spelled as a Python literal. */
    int identity;
    char identity_kind;
    const char *identity_literal;

    /* A gufunc's layout; signature is NULL (and the rest empty) for an elementwise ufunc. */
    const char *signature;          /* "(m,n),(n,p)->(m,p)" */
    int ncore_dims;                 /* distinct core dimensions, in NumPy's order */
    const int64_t *core_dim_sizes;  /* per distinct dimension: its frozen size, or
                                     * UFG_CORE_DIM_VARIABLE */
    const int *core_ndims;          /* per operand: how many core dimensions it has */
    const int *core_dim_ids;        /* every operand's core dimensions, operand after operand,
                                     * as indices into the distinct ones */
    PyUFunc_ProcessCoreDimsFunc *process_core_dims;   /* computed output dims, or NULL */

    /* The device loops: one entry per type signature, NumPy's own (in `types` order) then the
     * provided ones (in provided_types order), and their dtype codes (UFG_DT_*, the runtime's
     * numbers of ufuncgen/cast_element.h), (ntypes + nprovided) * (nin + nout) of them. */
    const ufg_device_loop *device_loops;
    const unsigned char *device_codes;

    /* Loops of type signatures that name a dtype NumPy does not define itself (bfloat16, from
     * ml_dtypes): registered with PyUFunc_RegisterLoopForType when every module in
     * provided_modules (NULL-terminated) can be imported. */
    int nprovided;
    PyUFuncGenericFunction *provided_loops;
    const char *const *provided_types;      /* nprovided * (nin + nout) dtype names */
    const char *const *provided_modules;
} ufg_function_descriptor;

/* The name of the capsule that carries a descriptor to ufuncgen.Function.  It names the
 * layout of the descriptor and of what it points to (ufg_device_loop, the kernel parameter
 * structs of device_kernel.h), so that a module built by a ufuncgen whose layout differs is
 * refused at import, not misread at its first device call: change the number with the
 * layout.  2: accumulate launchers in ufg_device_loop, out_scan_stride in ufg_reduce_params.
 * 3: ufg_value of 16 bytes (a complex128 scalar), in both parameter structs; reduceat
 * launchers in ufg_device_loop, segments in ufg_reduce_params.  4: at launchers in
 * ufg_device_loop, at_* in ufg_reduce_params.  5: the provided loops.  6: device_codes, and
 * device loops for the provided loops.  7: total and scan launchers in ufg_device_loop, carry and
 * carry_keep_strides in ufg_reduce_params.  8: steps_in_float in ufg_device_loop,
 * partials_in and partials_out in ufg_reduce_params.  9: host_at_loops.  10: a host_at_loop
 * takes a's type (and converts a narrower one). */
#define UFG_DESCRIPTOR_CAPSULE_PREFIX "ufuncgen.descriptor"
#define UFG_DESCRIPTOR_CAPSULE UFG_DESCRIPTOR_CAPSULE_PREFIX ".10"

#endif /* UFUNCGEN_DESCRIPTOR_H */
