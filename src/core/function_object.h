/*
 * ufuncgen.Function: the callable every generated ufunc is exposed as.
 *
 * It wraps a numpy.ufunc and forwards calls to it unchanged, so NumPy
 * semantics (out=, where=, __array_ufunc__, errstate, ...) hold exactly,
 * while giving the object its own name, module and docstring so it
 * pickles by reference and introspects like a module-level function.
 */
#ifndef UFG_CORE_FUNCTION_OBJECT_H
#define UFG_CORE_FUNCTION_OBJECT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
    PyObject_HEAD
    PyObject *ufunc;   /* numpy.ufunc; NULL only after tp_clear */
    PyObject *name;    /* str: __name__ and __qualname__ */
    PyObject *module;  /* str: __module__ */
    PyObject *doc;     /* str: __doc__ */
    PyObject *descriptor_capsule; /* the generated descriptor's capsule, or None */
    const struct ufg_function_descriptor *descriptor; /* in it, or NULL */
    short *host_at_cache;  /* host_at.c's loop per pair of types, made on the first .at */
    PyObject *weakreflist;
    vectorcallfunc vectorcall;
} ufg_FunctionObject;

extern PyTypeObject ufg_FunctionType;

#define ufg_Function_Check(op) PyObject_TypeCheck(op, &ufg_FunctionType)

/*
 * Ready ufg_FunctionType and add it to `module` as `Function`.
 * Requires the NumPy array and ufunc C APIs to be imported already.
 * Returns 0, or -1 with an exception set.
 */
int ufg_function_type_register(PyObject *module);

#endif /* UFG_CORE_FUNCTION_OBJECT_H */
