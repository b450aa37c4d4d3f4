/*
 * The hooks of ufuncgen._device for tests and benchmarks: what was launched, and the
 * simulator's switches (skipping kernels, injecting a launch error, stalling a stream) and
 * its stream table's size.
 */
#ifndef UFG_DEVICE_HOOKS_MODULE_H
#define UFG_DEVICE_HOOKS_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *ufg_launch_count_function(PyObject *module, PyObject *unused);
PyObject *ufg_last_launch_function(PyObject *module, PyObject *unused);
PyObject *ufg_sim_set_skip_kernels_function(PyObject *module, PyObject *skip);
PyObject *ufg_sim_inject_error_function(PyObject *module, PyObject *name);
PyObject *ufg_sim_stall_function(PyObject *module, PyObject *args, PyObject *kwargs);
PyObject *ufg_sim_is_async_function(PyObject *module, PyObject *unused);
PyObject *ufg_sim_stream_count_function(PyObject *module, PyObject *unused);

#endif /* UFG_DEVICE_HOOKS_MODULE_H */
