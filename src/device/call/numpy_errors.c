/*
 * NumPy's own exception classes for the refusals NumPy raises with them, so that a device call
 * raises what the same host call raises: a refused cast is NumPy's _UFuncInputCastingError or
 * _UFuncOutputCastingError (UFuncTypeError subclasses of TypeError), caught by the same
 * `except` clause on either path.  NumPy keeps these classes private (numpy._core._exceptions);
 * where they cannot be imported the refusal is a plain TypeError with NumPy's words.
 */
#include "call.h"

/* numpy._core._exceptions' classes, imported on the first refusal (NULL until then, or after
 * a failed import: Py_None). */
static PyObject *ufg_ufunc_type_error, *ufg_input_casting_error, *ufg_output_casting_error;

/* Never fails, and keeps an exception being raised: the caller may be deciding about it. */
static void
ufg_numpy_errors_import(void)
{
    PyObject *module, *type, *value, *traceback;

    if (ufg_ufunc_type_error != NULL) {
        return;
    }
    PyErr_Fetch(&type, &value, &traceback);
    module = PyImport_ImportModule("numpy._core._exceptions");
    if (module != NULL) {
        ufg_ufunc_type_error = PyObject_GetAttrString(module, "UFuncTypeError");
        ufg_input_casting_error = PyObject_GetAttrString(module, "_UFuncInputCastingError");
        ufg_output_casting_error = PyObject_GetAttrString(module, "_UFuncOutputCastingError");
        Py_DECREF(module);
    }
    if (ufg_ufunc_type_error == NULL || ufg_input_casting_error == NULL ||
        ufg_output_casting_error == NULL) {
        /* A NumPy that moved them: plain TypeErrors, which their callers catch too. */
        PyErr_Clear();
        Py_XSETREF(ufg_ufunc_type_error, Py_NewRef(Py_None));
        Py_XSETREF(ufg_input_casting_error, Py_NewRef(Py_None));
        Py_XSETREF(ufg_output_casting_error, Py_NewRef(Py_None));
    }
    PyErr_Restore(type, value, traceback);
}

int
ufg_numpy_casting_error(PyObject *ufunc, const char *casting, PyArray_Descr *from,
                        PyArray_Descr *to, int is_output, int index)
{
    PyObject *cls, *error;

    ufg_numpy_errors_import();
    cls = is_output ? ufg_output_casting_error : ufg_input_casting_error;
    if (cls == Py_None) {
        PyErr_Format(PyExc_TypeError, "Cannot cast ufunc %R %s %d from %R to %R with casting "
                     "rule '%s'", ufunc, is_output ? "output" : "input", index,
                     (PyObject *)from, (PyObject *)to, casting);
        return -1;
    }
    /* NumPy's own arguments: its __str__ writes the message from them. */
    error = PyObject_CallFunction(cls, "OsOOi", ufunc, casting, (PyObject *)from,
                                  (PyObject *)to, index);
    if (error != NULL) {
        PyErr_SetObject(cls, error);
        Py_DECREF(error);
    }
    return -1;
}

int
ufg_numpy_error_is_ufunc_type_error(void)
{
    ufg_numpy_errors_import();
    return ufg_ufunc_type_error != Py_None && PyErr_ExceptionMatches(ufg_ufunc_type_error);
}

/* Empty host arrays standing in for the call's buffers, its scalars as given: (inputs, outs). */
static PyObject *
ufg_stand_ins(const ufg_call *c, PyObject **outs)
{
    npy_intp none = 0;
    PyObject *inputs = PyTuple_New(c->nin);

    *outs = PyTuple_New(c->nout);
    for (int k = 0; inputs != NULL && *outs != NULL && k < c->nargs; k++) {
        const ufg_operand *op = &c->ops[k];
        PyObject *item;
        if (op->kind == UFG_OPERAND_BUFFER) {
            PyArray_Descr *descr = ufg_call_descr(op->code);
            item = descr == NULL ? NULL
                 : PyArray_Empty(1, &none, (PyArray_Descr *)Py_NewRef(descr), 0);
        }
        else {
            item = Py_NewRef(op->kind == UFG_OPERAND_ABSENT ? Py_None : op->obj);
        }
        if (item == NULL) {
            Py_CLEAR(inputs);
            break;
        }
        PyTuple_SET_ITEM(k < c->nin ? inputs : *outs, k < c->nin ? k : k - c->nin, item);
    }
    if (inputs == NULL) {
        Py_CLEAR(*outs);
    }
    return inputs;
}

int
ufg_numpy_converts_scalars(const ufg_call *c, const char *casting)
{
    PyObject *outs = NULL, *inputs = ufg_stand_ins(c, &outs), *kwargs = NULL, *result = NULL;

    if (inputs != NULL) {
        kwargs = Py_BuildValue("{s:O,s:O,s:s}", "out", outs, "signature", c->signature,
                               "casting", casting);
    }
    if (kwargs != NULL) {
        result = PyObject_Call(c->ufunc, inputs, kwargs);
    }
    Py_XDECREF(inputs);
    Py_XDECREF(outs);
    Py_XDECREF(kwargs);
    Py_XDECREF(result);
    return result == NULL ? -1 : 0;
}
