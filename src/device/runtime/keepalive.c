/*
 * Foreign arrays kept alive for queued work (keepalive.h says why).  A FIFO list, touched
 * only with the GIL held.
 */
#include "keepalive.h"

#include "runtime.h"

typedef struct ufg_kept {
    PyObject *obj;
    void *event;
    struct ufg_kept *next;
} ufg_kept;

static ufg_kept *ufg_kept_head = NULL, *ufg_kept_tail = NULL;
static Py_ssize_t ufg_kept_n = 0;

int
ufg_keep_until_done(const ufg_backend *backend, PyObject *obj, uintptr_t stream, int device)
{
    ufg_kept *kept = PyMem_Malloc(sizeof(*kept));
    int error;

    if (kept == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    error = backend->event_record((void *)stream, device, &kept->event);
    if (error) {
        PyMem_Free(kept);
        /* At process exit, after the runtime tore down its contexts, nothing runs any more
         * and there is nothing to wait for. */
        return error == UFG_ERROR_CUDART_UNLOADING
            ? 0 : ufg_device_error_int(backend, error, "recording an event");
    }
    kept->obj = Py_NewRef(obj);
    kept->next = NULL;
    if (ufg_kept_tail != NULL) {
        ufg_kept_tail->next = kept;
    }
    else {
        ufg_kept_head = kept;
    }
    ufg_kept_tail = kept;
    ufg_kept_n++;
    return 0;
}

void
ufg_release_done(const ufg_backend *backend)
{
    /* A failed query (a broken context) lets go too: nothing will run any more. */
    while (ufg_kept_head != NULL && backend->event_done(ufg_kept_head->event) != 0) {
        ufg_kept *kept = ufg_kept_head;
        ufg_kept_head = kept->next;
        if (ufg_kept_head == NULL) {
            ufg_kept_tail = NULL;
        }
        ufg_kept_n--;
        backend->event_destroy(kept->event);
        Py_DECREF(kept->obj);       /* may run the library's deallocator */
        PyMem_Free(kept);
    }
}

Py_ssize_t
ufg_kept_count(void)
{
    return ufg_kept_n;
}
