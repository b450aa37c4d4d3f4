/*
 * Which device a stream belongs to, and the check that work goes to a stream of its data's
 * device (stream_device.h says why).
 */
#include "stream_device.h"

#include "args.h"
#include "owned_stream.h"

int
ufg_stream_device(const ufg_backend *backend, uintptr_t stream)
{
    int device;

    if (stream <= UFG_LAST_DEFAULT_STREAM) {
        return -1;
    }
    /* Known without asking CUDA, whose answer needs a 12.8 runtime. */
    device = ufg_owned_stream_device(stream);
    return device >= 0 ? device : backend->stream_device((void *)stream);
}

int
ufg_check_stream_device(const ufg_backend *backend, uintptr_t stream, int device,
                        const char *stream_what, const char *data_what)
{
    const int stream_device = ufg_stream_device(backend, stream);

    if (stream_device < 0 || stream_device == device) {
        return 0;
    }
    PyErr_Format(PyExc_ValueError,
                 "%s %s is a stream of CUDA device %d, but %s CUDA device %d; CUDA runs work "
                 "only on a stream of the device it is for (make the stream on device %d)",
                 stream_what, ufg_hex(stream).text, stream_device, data_what, device, device);
    return -1;
}
