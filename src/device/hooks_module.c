/*
 * The hooks of ufuncgen._device for tests and benchmarks.  They observe and steer launches
 * below the Python dispatch layer, so that what they show holds whatever that layer becomes:
 * launch_count / last_launch read the launch record (launch.h); the sim_ hooks exist only
 * under the simulator.
 */
#include "hooks_module.h"

#include "args.h"
#include "launch.h"
#include "runtime.h"

PyObject *
ufg_launch_count_function(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    return PyLong_FromUnsignedLongLong(ufg_launch_count());
}

PyObject *
ufg_last_launch_function(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    static const char *const kinds[] = {
        [UFG_LAUNCH_ELEMENTWISE] = "elementwise", [UFG_LAUNCH_REDUCE] = "reduce",
        [UFG_LAUNCH_CAST] = "cast"};
    const ufg_launch_record *r = ufg_launch_last();
    PyObject *shape, *reduce_shape;

    if (r == NULL) {
        Py_RETURN_NONE;
    }
    shape = ufg_int64_tuple_new(r->shape, r->ndim);
    reduce_shape = ufg_int64_tuple_new(r->reduce_shape, r->reduce_ndim);
    if (shape == NULL || reduce_shape == NULL) {
        Py_XDECREF(shape);
        Py_XDECREF(reduce_shape);
        return NULL;
    }
    /* N steals the tuples' references. */
    return Py_BuildValue("{s:s,s:N,s:N,s:i,s:i,s:i,s:K,s:O}", "kind", kinds[r->kind],
                         "shape", shape, "reduce_shape", reduce_shape, "grid", (int)r->grid,
                         "block", (int)r->block, "device", r->device,
                         "stream", (unsigned long long)r->stream,
                         "ran", r->ran ? Py_True : Py_False);
}

/* The backend, if it is the simulator; else NULL with RuntimeError naming `hook` and what it
 * does. */
static const ufg_backend *
ufg_sim_backend_for(const char *hook, const char *what)
{
    const ufg_backend *backend = ufg_runtime_backend();

    if (backend != NULL && backend->id != UFG_BACKEND_SIM) {
        PyErr_Format(PyExc_RuntimeError,
                     "%s: the backend is %s; %s exists only under the simulator "
                     "(UFUNCGEN_DEVICE=sim)", hook, backend->name, what);
        return NULL;
    }
    return backend;
}

PyObject *
ufg_sim_set_skip_kernels_function(PyObject *Py_UNUSED(module), PyObject *skip)
{
    if (ufg_sim_backend_for("sim_set_skip_kernels", "skipping kernels") == NULL) {
        return NULL;
    }
    if (!PyBool_Check(skip)) {
        PyErr_Format(PyExc_TypeError, "skip: expected a bool, got %.100s",
                     Py_TYPE(skip)->tp_name);
        return NULL;
    }
    return PyBool_FromLong(ufg_sim_set_skip_kernels(skip == Py_True));
}

PyObject *
ufg_sim_inject_error_function(PyObject *Py_UNUSED(module), PyObject *name_obj)
{
    const char *name;

    if (ufg_sim_backend_for("_sim_inject_error", "error injection") == NULL) {
        return NULL;
    }
    if (!PyUnicode_Check(name_obj)) {
        PyErr_Format(PyExc_TypeError, "name: expected a str, got %.100s",
                     Py_TYPE(name_obj)->tp_name);
        return NULL;
    }
    name = PyUnicode_AsUTF8(name_obj);
    if (name == NULL) {
        return NULL;
    }
    if (ufg_sim_inject_error(name) < 0) {
        PyErr_Format(PyExc_ValueError,
                     "name: %R is not a CUDA error the simulator knows (for example "
                     "'cudaErrorIllegalAddress', 'cudaErrorLaunchFailure')", name_obj);
        return NULL;
    }
    Py_RETURN_NONE;
}

PyObject *
ufg_sim_stall_function(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"stream", "seconds", "device", NULL};
    PyObject *stream_obj, *device_obj = Py_None;
    const ufg_backend *backend;
    uintptr_t stream;
    double seconds;
    int device, error;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Od|O:sim_stall", keywords, &stream_obj,
                                     &seconds, &device_obj) ||
        (backend = ufg_sim_backend_for("sim_stall", "stalling a stream")) == NULL ||
        ufg_arg_uintptr(stream_obj, "stream", &stream) < 0) {
        return NULL;
    }
    if (!(seconds >= 0.0 && seconds <= 60.0)) {
        char text[32];

        /* PyErr_Format has no %g before Python 3.12. */
        PyOS_snprintf(text, sizeof text, "%g", seconds);
        PyErr_Format(PyExc_ValueError, "seconds: expected 0 to 60, got %s", text);
        return NULL;
    }
    if (device_obj == Py_None) {
        error = backend->current_device(&device);
    }
    else if (ufg_arg_device(backend, device_obj, "device", &device) < 0) {
        return NULL;
    }
    else {
        error = 0;
    }
    if (error == 0) {
        error = ufg_sim_stall((void *)stream, device, seconds);
    }
    return error ? ufg_device_error(backend, error, "stalling a stream") : Py_NewRef(Py_None);
}

PyObject *
ufg_sim_is_async_function(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    if (ufg_sim_backend_for("sim_is_async", "the simulator's mode") == NULL) {
        return NULL;
    }
    return PyBool_FromLong(ufg_sim_is_async());
}

PyObject *
ufg_sim_stream_count_function(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    if (ufg_sim_backend_for("_sim_stream_count", "its stream table") == NULL) {
        return NULL;
    }
    return PyLong_FromLong(ufg_sim_stream_count());
}
