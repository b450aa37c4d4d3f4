/*
 * Backend selection, DeviceError, and the per-device facts every launch needs.
 *
 * Nothing here runs at import: the backend is chosen, and CUDA first touched, by the first
 * call that needs a device, so `import ufuncgen._device` works on machines with no driver.
 */
#include "runtime.h"

#include <stdlib.h>
#include <string.h>

PyObject *ufg_DeviceError = NULL;

static const ufg_backend *ufg_backend_in_use = NULL;

/* Device facts do not change while a process runs; asked once (the count on first success). */
#define UFG_CACHED_DEVICES 64
static int ufg_device_count_cache = -1;
static int ufg_multiprocessor_cache[UFG_CACHED_DEVICES];

int
ufg_runtime_init(PyObject *module)
{
    ufg_DeviceError = PyErr_NewExceptionWithDoc(
        "ufuncgen._device.DeviceError",
        "An error reported by the device backend (the CUDA runtime or the simulator); the "
        "message names the CUDA error and the operation that failed.",
        PyExc_RuntimeError, NULL);
    if (ufg_DeviceError == NULL) {
        return -1;
    }
    if (PyModule_AddObjectRef(module, "DeviceError", ufg_DeviceError) < 0) {
        return -1;
    }
    return 0;
}

const ufg_backend *
ufg_runtime_backend(void)
{
    const char *choice, *error = NULL;
    const ufg_backend *backend;

    if (ufg_backend_in_use != NULL) {
        return ufg_backend_in_use;
    }
    choice = getenv("UFUNCGEN_DEVICE");
    if (choice == NULL || *choice == '\0' || strcmp(choice, "cuda") == 0) {
        backend = ufg_backend_cuda(&error);
    }
    else if (strcmp(choice, "sim") == 0) {
        backend = ufg_backend_sim(&error);
    }
    else {
        PyErr_Format(PyExc_ValueError,
                     "UFUNCGEN_DEVICE=%s is not a device backend; expected 'cuda' (the "
                     "default, also when unset) or 'sim' (the host simulator)", choice);
        return NULL;
    }
    if (backend == NULL) {
        PyErr_SetString(PyExc_ValueError, error);
        return NULL;
    }
    ufg_backend_in_use = backend;
    return backend;
}

PyObject *
ufg_device_error(const ufg_backend *backend, int code, const char *what)
{
    PyErr_Format(ufg_DeviceError, "ufuncgen: CUDA error %s (%s) during %s",
                 backend->error_name(code), backend->error_string(code), what);
    return NULL;
}

int
ufg_device_error_int(const ufg_backend *backend, int code, const char *what)
{
    ufg_device_error(backend, code, what);
    return -1;
}

int
ufg_runtime_device_count(const ufg_backend *backend)
{
    int count = 0, error;

    if (ufg_device_count_cache >= 0) {
        return ufg_device_count_cache;
    }
    error = backend->device_count(&count);
    if (error) {
        return ufg_device_error_int(backend, error, "counting devices");
    }
    ufg_device_count_cache = count;
    return count;
}

int
ufg_runtime_check_device(const ufg_backend *backend, long long device, const char *argname)
{
    const int count = ufg_runtime_device_count(backend);

    if (count < 0) {
        return -1;
    }
    if (device < 0 || device >= count) {
        PyErr_Format(PyExc_ValueError,
                     "%s: expected a device ordinal from 0 to %d (the %s backend has %d "
                     "device%s), got %lld", argname, count - 1, backend->name, count,
                     count == 1 ? "" : "s", device);
        return -1;
    }
    return 0;
}

int
ufg_runtime_multiprocessors(const ufg_backend *backend, int device)
{
    int count = 0, error;

    if (device < UFG_CACHED_DEVICES && ufg_multiprocessor_cache[device] > 0) {
        return ufg_multiprocessor_cache[device];
    }
    error = backend->multiprocessor_count(device, &count);
    if (error) {
        return ufg_device_error_int(backend, error, "querying the multiprocessor count");
    }
    if (count < 1) {
        count = 1;
    }
    if (device < UFG_CACHED_DEVICES) {
        ufg_multiprocessor_cache[device] = count;
    }
    return count;
}
