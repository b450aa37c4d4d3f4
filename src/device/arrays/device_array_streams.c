/*
 * The stream of an array's last use, and of the allocation's (device_array.h says why).
 *
 * One stream per array, not a set of readers: when a second stream uses the array it first
 * waits for the stream of the last use, so the last use's stream is always ordered after all
 * earlier uses, and one wait before a write or a free covers every one of them.  Readers on
 * two streams are thereby ordered with each other at the point of use; that costs some
 * overlap between them and keeps the bookkeeping at one handle and one reference.
 */
#include "device_array.h"

#include "owned_stream.h"
#include "runtime.h"

PyObject *
ufg_stream_keeper_of(uintptr_t stream, PyObject *keeper)
{
    PyObject *owned = ufg_owned_stream_find(stream);

    return owned != NULL ? owned : keeper;
}

/* The array whose allocation `array` views (itself when it views no DeviceArray). */
static ufg_DeviceArrayObject *
ufg_device_array_root(ufg_DeviceArrayObject *array)
{
    while (array->owner != NULL && ufg_DeviceArray_Check(array->owner)) {
        array = (ufg_DeviceArrayObject *)array->owner;
    }
    return array;
}

uintptr_t
ufg_device_array_last_use(const ufg_DeviceArrayObject *array)
{
    return ufg_device_array_root((ufg_DeviceArrayObject *)array)->stream;
}

int
ufg_device_array_wait_for(const ufg_backend *backend, ufg_DeviceArrayObject *array,
                          uintptr_t stream)
{
    const ufg_DeviceArrayObject *root = ufg_device_array_root(array);
    uintptr_t waited = stream;
    int error;

    for (const ufg_DeviceArrayObject *a = array;; a = (ufg_DeviceArrayObject *)a->owner) {
        if (a->stream != waited) {
            waited = a->stream;
            error = backend->stream_wait((void *)stream, (void *)a->stream, a->device);
            if (error) {
                return ufg_device_error_int(backend, error, "ordering streams");
            }
        }
        if (a == root) {
            return 0;
        }
    }
}

void
ufg_device_array_used_on(ufg_DeviceArrayObject *array, uintptr_t stream, PyObject *keeper)
{
    ufg_DeviceArrayObject *root = ufg_device_array_root(array);

    keeper = ufg_stream_keeper_of(stream, keeper);
    for (ufg_DeviceArrayObject *a = array;; a = (ufg_DeviceArrayObject *)a->owner) {
        a->queued_on = 1;
        if (a->stream != stream || a->stream_keeper != keeper) {
            a->stream = stream;
            Py_XSETREF(a->stream_keeper, Py_XNewRef(keeper));
        }
        if (a == root) {
            return;
        }
    }
}
