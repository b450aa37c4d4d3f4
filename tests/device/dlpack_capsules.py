"""A DLPack producer whose every field a test chooses: capsules built from ctypes structures of
the DLPack ABI (dlpack.h), to check what a consumer refuses before any kernel reads the tensor."""
import ctypes

KDLCPU, KDLCUDA = 1, 2
KDLFLOAT = 2


# ctypes mirrors of the DLPack ABI's structs (dlpack.h), shared by the device tests that build
# capsules a well-behaved producer would not.
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


# The deleter gets the managed tensor's address; DELETER() is a NULL one.
DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# Every structure a capsule points to lives as long as the process: a consumer may run the
# deleter whenever it likes, and the deleter here frees nothing.
_alive = []
deleted = []


@DELETER
def _deleter(address):
    deleted.append(address)


def capsule(ptr, shape, strides=None, *, ndim=None, shape_missing=False, code=KDLFLOAT,
            bits=64, lanes=1, device_type=KDLCUDA, device_id=0, byte_offset=0):
    """A "dltensor" capsule of the given fields (strides in elements; None: C-contiguous)."""
    n = len(shape) if ndim is None else ndim
    sizes = (ctypes.c_int64 * max(len(shape), 1))(*shape)
    steps = None if strides is None else (ctypes.c_int64 * max(len(strides), 1))(*strides)
    managed = DLManagedTensor()
    tensor = managed.dl_tensor
    tensor.data = ptr
    tensor.device = DLDevice(device_type, device_id)
    tensor.ndim = n
    tensor.dtype = DLDataType(code, bits, lanes)
    if not shape_missing:
        tensor.shape = ctypes.cast(sizes, ctypes.POINTER(ctypes.c_int64))
    if steps is not None:
        tensor.strides = ctypes.cast(steps, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = byte_offset
    managed.deleter = _deleter
    _alive.extend([sizes, steps, managed])
    return _new_capsule(ctypes.addressof(managed), b"dltensor", None)


class Producer:
    """A DLPack producer handing out capsule(**fields), on the device its fields name (or,
    lying, on `claimed`)."""

    def __init__(self, claimed=None, **fields):
        self.fields = fields
        self.claimed = claimed

    def __dlpack_device__(self):
        if self.claimed is not None:
            return self.claimed
        return (self.fields.get("device_type", KDLCUDA), self.fields.get("device_id", 0))

    def __dlpack__(self, stream=None, **kwargs):
        return capsule(**self.fields)
