/*
 * A view's owner let go in stream order (device_array.h, ufg_device_array_release_owner).
 *
 * A view of a foreign array or of a DLPack tensor may be last used on a stream its producer
 * knows nothing of: the call that used it recorded that stream on the view, not on the
 * producer.  Dropping the owner at once would let the producer free its memory, or hand it
 * out again, ordered on the producer's own stream only, before the view's last kernel has
 * read or written it.  So the owner goes to the keep-alive list (keepalive.h) with an event on
 * the view's stream, and is released once that stream has passed the view's work: polled from
 * the host at the next device call, copy to the host or synchronisation, never from a CUDA
 * host callback, where no Python may run.
 *
 * A view no ufuncgen work used lets go at once: nothing of ours is queued on its memory, and
 * the stream it names may be its producer's, which may be gone by then.
 */
#include "device_array.h"

#include "keepalive.h"
#include "runtime.h"

/* Hands `owner` to the keep-alive list; when that fails (no event to be had: a destroyed
 * stream, a broken context), the caller's reference is all there is and goes at once. */
static void
ufg_device_array_keep_owner(ufg_DeviceArrayObject *self, PyObject *owner)
{
    PyObject *type, *value, *traceback;
    const ufg_backend *backend;

    /* A dealloc may run while an exception propagates (a failed call drops its operands). */
    PyErr_Fetch(&type, &value, &traceback);
    backend = ufg_runtime_backend();
    if (backend == NULL ||
        ufg_keep_until_done(backend, owner, self->stream, self->device) < 0) {
        PyErr_WriteUnraisable(NULL);
    }
    PyErr_Restore(type, value, traceback);
}

void
ufg_device_array_release_owner(ufg_DeviceArrayObject *self)
{
    PyObject *owner = self->owner;

    if (owner == NULL) {
        return;
    }
    self->owner = NULL;
    if (self->queued_on && !ufg_DeviceArray_Check(owner)) {
        ufg_device_array_keep_owner(self, owner);
    }
    /* The last reference only when it could not be kept: a deallocator (the DLPack holder's
     * destructor too) keeps any exception in flight itself. */
    Py_DECREF(owner);
}
