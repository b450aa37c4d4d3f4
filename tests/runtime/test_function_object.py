"""Behaviour of ufuncgen._core.Function, the wrapper type of generated ufuncs.

These tests wrap NumPy's own ufuncs, so they need the compiled
``ufuncgen._core`` extension but nothing generated.
"""

import copy
import gc
import re
import pickle
import sys
import types
import warnings
import weakref

import numpy as np
import pytest

from ufuncgen._core import Function



def wrap(ufunc, name=None, module="ufg_tests.generated", doc="Test doc."):
    return Function(ufunc, name or ufunc.__name__, module, doc)


@pytest.fixture
def add():
    return wrap(np.add)


ROUTED = "built without device kernels"   # the refusal of a Function with no descriptor


class CudaArrayInterfaceBuffer:
    """Looks like a CUDA array; evaluating the interface is an error."""

    evaluations = 0

    @property
    def __cuda_array_interface__(self):
        type(self).evaluations += 1
        raise AssertionError("__cuda_array_interface__ must not be evaluated")


class DLPackBuffer:
    """Host-convertible object that reports a configurable DLPack device."""

    def __init__(self, device, values=(1.0, 2.0, 3.0)):
        self.device = device
        self.values = np.asarray(values)

    def __dlpack_device__(self):
        return self.device

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)


class BrokenDLPackBuffer:
    def __dlpack_device__(self):
        raise ZeroDivisionError("device query failed")


# --------------------------------------------------------------------------
# Forwarding calls
# --------------------------------------------------------------------------


@pytest.mark.parametrize("ufunc", [np.add, np.hypot])
def test_call_is_forwarded_to_the_wrapped_ufunc(ufunc):
    function = wrap(ufunc)
    x = np.linspace(-2.0, 3.0, 10)
    y = np.arange(10, dtype=np.float32)

    for args in [(x, y), (x, 2.5), (1.5, 2), (np.float32(1), True), ([1, 2], x[:2])]:
        expected = ufunc(*args)
        result = function(*args)
        assert type(result) is type(expected)
        assert np.asarray(result).dtype == np.asarray(expected).dtype
        np.testing.assert_array_equal(result, expected)


def test_gufunc_call_is_forwarded_to_the_wrapped_gufunc():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3, 3))
    b = rng.standard_normal((4, 3, 2))

    np.testing.assert_array_equal(wrap(np.matmul)(a, b), np.matmul(a, b))
    np.testing.assert_array_equal(wrap(np.vecdot)(a, a), np.vecdot(a, a))
    det = np.linalg._umath_linalg.det
    np.testing.assert_array_equal(wrap(det, "det")(a), det(a))


def test_argument_errors_come_from_the_wrapped_ufunc(add):
    with pytest.raises(TypeError) as from_function:
        add(1)
    with pytest.raises(TypeError) as from_ufunc:
        np.add(1)
    assert str(from_function.value) == str(from_ufunc.value)


def test_out_keyword_writes_into_the_given_array(add):
    out = np.zeros(3)
    result = add(np.ones(3), 2.0, out=out)
    assert result is out
    np.testing.assert_array_equal(out, [3.0, 3.0, 3.0])

    out_tuple = np.zeros(3)
    assert add(np.ones(3), 1.0, out=(out_tuple,)) is out_tuple
    np.testing.assert_array_equal(out_tuple, [2.0, 2.0, 2.0])


def test_out_keyword_with_a_runtime_built_name_is_forwarded(add):
    out = np.zeros(2)
    assert add(np.ones(2), 1.0, **{"".join(["o", "ut"]): out}) is out
    np.testing.assert_array_equal(out, [2.0, 2.0])


def test_where_keyword_leaves_masked_elements_untouched(add):
    out = np.full(4, -1.0)
    add(np.ones(4), 1.0, out=out, where=np.array([True, False, True, False]))
    np.testing.assert_array_equal(out, [2.0, -1.0, 2.0, -1.0])


def test_dtype_keyword_selects_the_loop(add):
    result = add(np.arange(3), np.arange(3), dtype=np.float32)
    assert result.dtype == np.float32
    np.testing.assert_array_equal(result, [0.0, 2.0, 4.0])


def test_axes_keyword_is_honoured_for_gufuncs():
    matmul = wrap(np.matmul)
    a = np.arange(12.0).reshape(3, 2, 2)
    b = np.arange(12.0, 24.0).reshape(3, 2, 2)
    axes = [(1, 2), (1, 2), (1, 2)]
    np.testing.assert_array_equal(
        matmul(a, b, axes=axes), np.matmul(a, b, axes=axes)
    )


def test_errstate_is_honoured():
    divide = wrap(np.divide)
    with np.errstate(divide="raise"):
        with pytest.raises(FloatingPointError):
            divide(np.array([1.0]), np.array([0.0]))
    with np.errstate(divide="ignore"):
        assert divide(np.array([1.0]), np.array([0.0]))[0] == np.inf


def test_array_ufunc_override_is_honoured(add):
    seen = []

    class Overriding:
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            seen.append((ufunc, method, inputs, kwargs))
            return "overridden"

    other = Overriding()
    assert add(1, other, dtype=float) == "overridden"
    assert add.reduce(other) == "overridden"
    assert seen[0] == (add, "__call__", (1, other), {"dtype": float})
    assert seen[1][:2] == (add, "reduce")


def test_ndarray_subclasses_are_computed_on_the_host(add, forbidden_device_hook):
    class Sub(np.ndarray):
        pass

    x = np.arange(3.0).view(Sub)
    result = add(x, x)
    assert type(result) is Sub
    np.testing.assert_array_equal(result, [0.0, 2.0, 4.0])


def test_repeated_calls_do_not_leak_references(add):
    x = np.arange(10.0)
    y = np.arange(10.0)
    out = np.empty(10)
    before = (sys.getrefcount(x), sys.getrefcount(y), sys.getrefcount(out),
              sys.getrefcount(add))
    for _ in range(10_000):
        add(x, y)
        add(x, y, out=out)
        add(x, 2.0, out=(out,))
    after = (sys.getrefcount(x), sys.getrefcount(y), sys.getrefcount(out),
             sys.getrefcount(add))
    assert after == before


# --------------------------------------------------------------------------
# Attributes
# --------------------------------------------------------------------------


def test_ufunc_methods_are_reached_through_the_function(add):
    x = np.arange(1.0, 6.0)
    np.testing.assert_array_equal(add.reduce(x), np.add.reduce(x))
    np.testing.assert_array_equal(add.accumulate(x), np.add.accumulate(x))
    np.testing.assert_array_equal(add.outer(x, x), np.add.outer(x, x))
    np.testing.assert_array_equal(
        add.reduceat(x, [0, 2]), np.add.reduceat(x, [0, 2])
    )
    target = np.zeros(3)
    add.at(target, [0, 0, 2], 1.0)
    np.testing.assert_array_equal(target, [2.0, 0.0, 1.0])
    dtypes = (np.dtype("f4"), np.dtype("f8"), None)
    assert add.resolve_dtypes(dtypes) == np.add.resolve_dtypes(dtypes)


@pytest.mark.parametrize(
    "ufunc", [np.add, np.hypot, np.matmul, np.linalg._umath_linalg.det]
)
@pytest.mark.parametrize(
    "attribute", ["nin", "nout", "nargs", "ntypes", "types", "signature", "identity"]
)
def test_ufunc_attributes_fall_back_to_the_wrapped_ufunc(ufunc, attribute):
    assert getattr(wrap(ufunc, "f"), attribute) == getattr(ufunc, attribute)


def test_ufunc_attribute_is_the_wrapped_ufunc(add):
    assert add.ufunc is np.add


@pytest.mark.parametrize("method", ["reduce", "accumulate", "reduceat", "outer", "at"])
def test_each_method_has_a_signature_with_the_parameters_of_numpys_own(add, method):
    import inspect
    ours = inspect.signature(getattr(add, method))
    numpys = inspect.signature(getattr(np.add, method))
    assert list(ours.parameters) == list(numpys.parameters)
    assert [p.default for p in ours.parameters.values()] == [
        p.default for p in numpys.parameters.values()]


def test_name_qualname_module_and_doc_are_the_stored_values():
    function = Function(np.hypot, "length", "pkg.geometry", "Length of (x, y).")
    assert function.__name__ == "length"
    assert function.__qualname__ == "length"
    assert function.__module__ == "pkg.geometry"
    assert function.__doc__ == "Length of (x, y)."


def test_the_type_keeps_its_own_name_and_doc():
    assert Function.__name__ == "Function"
    assert Function.__module__ == "ufuncgen"
    assert Function.__doc__.startswith("A named NumPy ufunc")


def test_unknown_attributes_raise_attribute_error_naming_function(add):
    with pytest.raises(
        AttributeError, match="^'ufuncgen.Function' object has no attribute 'nope'$"
    ):
        add.nope
    assert getattr(add, "nope", "default") == "default"


@pytest.mark.parametrize(
    "attribute", ["__name__", "__qualname__", "__module__", "__doc__", "ufunc", "nin", "new"]
)
def test_attributes_cannot_be_set_or_deleted(add, attribute):
    with pytest.raises(AttributeError, match="read-only"):
        setattr(add, attribute, "x")
    with pytest.raises(AttributeError, match="read-only"):
        delattr(add, attribute)
    assert add.__name__ == "add"


def test_dir_lists_the_function_and_the_ufunc_names(add):
    names = dir(add)
    for name in ["__reduce__", "ufunc", "__name__", "reduce", "outer", "nin", "types"]:
        assert name in names
    assert names == sorted(set(names))


def test_weak_references_are_supported():
    add = wrap(np.add)
    ref = weakref.ref(add)
    assert ref() is add
    del add
    gc.collect()
    assert ref() is None


def test_a_cycle_through_the_ufunc_is_collected():
    holder = {}
    ufunc = np.frompyfunc(lambda x: holder["function"], 1, 1)
    holder["function"] = wrap(ufunc, "cyclic")
    ref = weakref.ref(holder["function"])
    del holder, ufunc
    gc.collect()
    assert ref() is None


# --------------------------------------------------------------------------
# repr
# --------------------------------------------------------------------------


def test_repr_names_the_function_and_its_arity():
    function = Function(np.hypot, "length", "pkg.geometry", "")
    assert repr(function) == (
        "<ufuncgen.Function 'pkg.geometry.length' (ufunc, nin=2, nout=1)>"
    )


def test_repr_of_a_gufunc_shows_its_core_signature():
    function = Function(np.matmul, "matmul", "pkg.linalg", "")
    assert repr(function) == (
        "<ufuncgen.Function 'pkg.linalg.matmul' "
        "(gufunc (n?,k),(k,m?)->(n?,m?), nin=2, nout=1)>"
    )


def test_repr_of_a_multi_output_ufunc_counts_all_outputs():
    function = Function(np.divmod, "divmod", "pkg", "")
    assert repr(function) == "<ufuncgen.Function 'pkg.divmod' (ufunc, nin=2, nout=2)>"


# --------------------------------------------------------------------------
# Construction
# --------------------------------------------------------------------------


def test_constructor_accepts_keywords():
    function = Function(ufunc=np.add, name="add", module="m", doc="d")
    assert function(1, 2) == 3


def test_constructor_rejects_a_non_ufunc_with_a_clear_message():
    with pytest.raises(TypeError) as excinfo:
        Function(len, "len", "m", "")
    assert str(excinfo.value) == (
        "Function() argument 'ufunc' must be numpy.ufunc, "
        "not builtin_function_or_method"
    )


@pytest.mark.parametrize(
    "position, argument", [(1, "name"), (2, "module"), (3, "doc")]
)
def test_constructor_rejects_non_str_text_arguments(position, argument):
    args = [np.add, "add", "m", "doc"]
    args[position] = 42
    with pytest.raises(TypeError) as excinfo:
        Function(*args)
    assert str(excinfo.value) == f"Function() argument '{argument}' must be str, not int"


def test_constructor_requires_all_four_arguments():
    with pytest.raises(TypeError, match="Function"):
        Function(np.add, "add", "m")


# --------------------------------------------------------------------------
# Pickling and copying
# --------------------------------------------------------------------------


@pytest.fixture
def global_function(monkeypatch):
    module = types.ModuleType("ufg_pickle_target")
    module.hypot = Function(np.hypot, "hypot", "ufg_pickle_target", "")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module.hypot


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_pickle_round_trip_returns_the_module_level_global(global_function, protocol):
    data = pickle.dumps(global_function, protocol=protocol)
    assert b"ufg_pickle_target" in data
    assert pickle.loads(data) is global_function


def test_pickling_a_function_that_is_not_its_module_global_fails(monkeypatch):
    monkeypatch.setitem(
        sys.modules, "ufg_pickle_empty", types.ModuleType("ufg_pickle_empty")
    )
    with pytest.raises(pickle.PicklingError):
        pickle.dumps(Function(np.add, "add", "ufg_pickle_empty", ""))


def test_copy_and_deepcopy_return_the_same_object(add):
    assert copy.copy(add) is add
    assert copy.deepcopy(add) is add
    assert copy.deepcopy({"f": [add]})["f"][0] is add


# --------------------------------------------------------------------------
# Device seam
# --------------------------------------------------------------------------


def test_host_arguments_never_reach_the_device_hook(add, forbidden_device_hook):
    x = np.arange(3.0)
    add(x, x)
    add(x, 1, out=x)
    add(1.0, 2)
    add(np.float32(1), 2j)
    add([1, 2], (3, 4))
    add(np.ma.masked_array([1.0, 2.0]), 1.0)


def test_cuda_array_interface_argument_is_routed_to_the_device_path(add):
    CudaArrayInterfaceBuffer.evaluations = 0
    buffer = CudaArrayInterfaceBuffer()
    x = np.arange(3.0)
    with pytest.raises(TypeError, match=f"add was {ROUTED}"):
        add(x, buffer, dtype=np.float32)
    assert CudaArrayInterfaceBuffer.evaluations == 0


def test_dlpack_cpu_device_takes_the_host_path(add, forbidden_device_hook):
    buffer = DLPackBuffer((1, 0))
    np.testing.assert_array_equal(add(buffer, 1.0), [2.0, 3.0, 4.0])


def test_dlpack_pinned_host_memory_takes_the_host_path(add, forbidden_device_hook):
    np.testing.assert_array_equal(add(DLPackBuffer((3, 0)), 0.0), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("device_type", [2, 13])
def test_dlpack_cuda_device_is_routed_to_the_device_path(add, device_type):
    with pytest.raises(TypeError, match=ROUTED):
        add(1.0, DLPackBuffer((device_type, 0)))


class CPUTensor:
    """A host array whose type has a __cuda_array_interface__ that raises AttributeError on
    the instance, as torch.Tensor's does for a CPU tensor; NumPy reads it through __array__."""

    def __init__(self, values=(1.0, 2.0, 3.0)):
        self.values = np.asarray(values)

    @property
    def __cuda_array_interface__(self):
        raise AttributeError("Can't get __cuda_array_interface__ on non-CUDA tensor type")

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)


class CPUTensorWithDLPack(CPUTensor):
    """torch.Tensor on the CPU in full: its DLPack device says CPU (kDLCPU = 1)."""

    @property
    def __cuda_array_interface__(self):
        raise AssertionError("the DLPack device answers first: the interface is not read")

    def __dlpack_device__(self):
        return (1, 0)


class CUDATensorWithDLPack(CPUTensorWithDLPack):
    """torch.Tensor on a GPU: DLPack says CUDA; the interface is left for the device path."""

    def __dlpack_device__(self):
        return (2, 0)


class InterfaceReadFails(CPUTensor):
    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("CUDA driver not initialised")


class ReadableInterface(CPUTensor):
    """Host-readable, and with an interface on the instance too: a device buffer, as before."""

    @property
    def __cuda_array_interface__(self):
        return {"shape": (3,), "typestr": "<f8", "data": (0, False), "version": 3}


@pytest.mark.parametrize("kind", [CPUTensor, CPUTensorWithDLPack])
@pytest.mark.parametrize("call", [
    lambda f, t: f(t, 1.0),
    lambda f, t: f(2.0, t),
    lambda f, t: f(t, t, out=np.empty(3)),
    lambda f, t: f.reduce(t),
    lambda f, t: f.reduce(array=t, keepdims=True),
    lambda f, t: f.accumulate(array=t),
    lambda f, t: f.reduceat(t, [0, 2]),
    lambda f, t: f.outer(t, t),
], ids=["call", "second argument", "out=", "reduce", "reduce(array=)", "accumulate(array=)",
        "reduceat", "outer"])
def test_an_object_whose_cuda_array_interface_raises_attribute_error_is_a_host_argument(
        add, kind, call, forbidden_device_hook):
    np.testing.assert_array_equal(call(add, kind()), call(np.add, kind()))


def test_a_host_object_given_as_out_is_refused_as_numpy_refuses_it(add):
    with pytest.raises(TypeError, match="return arrays must be of ArrayType"):
        np.add(np.ones(3), 1.0, out=CPUTensor())
    with pytest.raises(TypeError, match="return arrays must be of ArrayType"):
        add(np.ones(3), 1.0, out=CPUTensor())


def test_an_error_reading_the_cuda_array_interface_other_than_attribute_error_propagates(add):
    with pytest.raises(RuntimeError, match="CUDA driver not initialised"):
        add(np.arange(3.0), InterfaceReadFails())
    with pytest.raises(RuntimeError, match="CUDA driver not initialised"):
        add.reduce(array=InterfaceReadFails())


@pytest.mark.parametrize("kind", [ReadableInterface, CUDATensorWithDLPack])
def test_a_host_readable_object_with_a_cuda_array_interface_is_still_routed_to_the_device(
        add, kind):
    with pytest.raises(TypeError, match=ROUTED):
        add(np.arange(3.0), kind())


def test_an_override_of_an_object_whose_cuda_array_interface_raises_is_asked_like_numpy(add):
    class Overriding(CPUTensor):
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return "overridden", method

    assert np.add(Overriding(), 1.0) == ("overridden", "__call__")
    assert add(Overriding(), 1.0) == ("overridden", "__call__")


@pytest.mark.parametrize("make_out", [lambda b: b, lambda b: (b,)])
def test_device_out_argument_is_detected(add, make_out):
    x = np.arange(3.0)
    with pytest.raises(TypeError, match=ROUTED):
        add(x, x, out=make_out(DLPackBuffer((2, 0))))


def test_device_out_argument_is_detected_in_a_multi_output_tuple():
    divmod_ = wrap(np.divmod)
    with pytest.raises(TypeError, match=ROUTED):
        divmod_(np.arange(3.0), 2.0, out=(np.empty(3), CudaArrayInterfaceBuffer()))


def test_error_in_dlpack_device_propagates(add, forbidden_device_hook):
    with pytest.raises(ZeroDivisionError, match="device query failed"):
        add(np.arange(3.0), BrokenDLPackBuffer())
    with pytest.raises(ZeroDivisionError, match="device query failed"):
        add(np.arange(3.0), 1.0, out=(BrokenDLPackBuffer(),))


@pytest.mark.parametrize("call", [
    lambda add, a, o: add.accumulate(a, out=o),
    lambda add, a, o: add.accumulate(a, out=(o,)),
    lambda add, a, o: add.accumulate(a, 0, None, o),
])
@pytest.mark.parametrize("array", [np.ones(1), np.ones(3), np.zeros(0), [1.0, 2.0]])
def test_accumulate_into_a_0d_out_is_numpys_wrong_size_error_not_a_crash(add, call, array):
    # NumPy 2.4's own accumulate segfaults here (np.add.accumulate(np.ones(1), out=np.array(0.)))
    out = np.array(7.0)
    with pytest.raises(ValueError, match="provided out is the wrong size for the accumulation"):
        call(add, array, out)
    assert out == 7.0


@pytest.mark.parametrize("call", [
    lambda add, a, o: add.accumulate(array=a, out=o),
    lambda add, a, o: add.accumulate(array=a, out=(o,)),
    lambda add, a, o: add.accumulate(a, 0, out=o),
    lambda add, a, o: add.accumulate(a, 0, None, out=(o,)),
    lambda add, a, o: add.accumulate(array=a, axis=0, dtype=np.float64, out=o),
    lambda add, a, o: add.accumulate(out=(o,), dtype=None, array=a, axis=-1),
    lambda add, a, o: add.accumulate(**{"array": a, "out": o}),
], ids=["array=, out=", "array=, out=(o,)", "axis by position, out=",
        "dtype by position, out=(o,)", "axis=, dtype=", "keywords in another order",
        "names built at run time"])
@pytest.mark.parametrize("array", [np.ones(1), np.zeros(0), [1.0], memoryview(np.ones(2))],
                         ids=["one element", "empty", "list", "memoryview"])
def test_accumulate_into_a_0d_out_is_the_wrong_size_error_however_the_arguments_are_passed(
        add, call, array):
    # np.add.accumulate(array=np.ones(1), out=np.array(0.)) segfaults, as the positional call does
    out = np.array(7.0)
    with pytest.raises(ValueError, match="provided out is the wrong size for the accumulation"):
        call(add, array, out)
    assert out == 7.0


@pytest.mark.parametrize("errstate", ["raise", "warn"])
@pytest.mark.parametrize("array", [np.array([1e308, 1e308]), np.full((2, 3), 1e308)],
                         ids=["1-d", "2-d"])
def test_accumulate_into_a_0d_out_computes_nothing_before_its_error(add, array, errstate):
    # The other arguments are checked on an empty array of the operand's dimensions and dtype:
    # no overflow, raised or warned, before the wrong-size error.
    out = np.array(7.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all=errstate), pytest.raises(
                ValueError, match="provided out is the wrong size for the accumulation"):
            add.accumulate(array, axis=-1, out=out)
    assert out == 7.0


@pytest.mark.parametrize("call", [
    lambda f, o: f.accumulate(array=np.array(2.0), out=o),
    lambda f, o: f.accumulate(array=3.0, out=(o,)),
    lambda f, o: f.accumulate(np.ones(1), 0, None, (o,)),
    lambda f, o: f.accumulate(np.ones(1), out=[o]),
    lambda f, o: f.accumulate(np.ones(1), array=np.ones(1), out=o),
    lambda f, o: f.accumulate(np.ones(1), 0, None, o, out=o),
    lambda f, o: f.accumulate(array=np.ones(1), out=(o, o)),
], ids=["0-d array=", "scalar array=", "out as a positional tuple", "out as a list",
        "array given twice", "out given twice", "out tuple of two"])
def test_accumulate_calls_numpy_refuses_before_reaching_a_0d_out_keep_numpys_error(add, call):
    out = np.array(7.0)
    with pytest.raises(Exception) as numpys:
        call(np.add, out)
    with pytest.raises(type(numpys.value), match=re.escape(str(numpys.value))):
        call(add, out)
    assert out == 7.0


@pytest.mark.parametrize("kwargs", [{"axis": 5}, {"axis": -2}, {"axis": 1.5}, {"dtype": "S3"},
                                    {"dtype": ">f8"}, {"where": True}],
                         ids=["axis out of range", "negative axis", "float axis", "string dtype",
                              "byte-swapped dtype", "where="])
def test_accumulate_into_a_0d_out_reports_numpys_error_about_another_argument_first(add, kwargs):
    # NumPy checks axis= and dtype= before out=; the guard against its 0-d-out crash kept it
    # from doing so, and said "wrong size" where NumPy says what else is wrong.
    with pytest.raises(Exception) as numpys:
        np.add.accumulate(np.ones(1), **kwargs)
    out = np.array(7.0)
    with pytest.raises(type(numpys.value), match=re.escape(str(numpys.value))):
        add.accumulate(np.ones(1), **kwargs, out=out)
    assert out == 7.0


def test_accumulate_of_a_0d_array_into_a_0d_out_is_still_numpys_scalar_error(add):
    with pytest.raises(TypeError, match="cannot accumulate on a scalar"):
        add.accumulate(np.array(2.0), out=np.array(7.0))


def _capsule(name):
    """A PyCapsule named `name` (pointing at a dummy int), as a module's descriptor is."""
    import ctypes
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    _capsule.keep = getattr(_capsule, "keep", []) + [ctypes.c_int(0), name.encode()]
    return new(ctypes.addressof(_capsule.keep[-2]), _capsule.keep[-1], None)


@pytest.mark.parametrize("name", ["ufuncgen.descriptor", "ufuncgen.descriptor.1",
                                  "ufuncgen.descriptor.2", "ufuncgen.descriptor.3",
                                  "ufuncgen.descriptor.4", "ufuncgen.descriptor.5",
                                  "ufuncgen.descriptor.6", "ufuncgen.descriptor.7",
                                  "ufuncgen.descriptor.8", "ufuncgen.descriptor.9"])
def test_a_descriptor_of_another_ufuncgens_layout_is_refused_at_import(name):
    with pytest.raises(ImportError, match=rf"module 'old_module' was built by a ufuncgen "
                                          rf"whose generated code has another layout "
                                          rf"\(descriptor '{name}', this ufuncgen reads "
                                          rf"'ufuncgen\.descriptor\.10'\); rebuild it"):
        Function(np.add, "add", "old_module", "doc", _capsule(name))


def test_a_capsule_that_is_no_descriptor_is_a_type_error():
    with pytest.raises(TypeError, match="descriptor"):
        Function(np.add, "add", "m", "doc", _capsule("something.else"))
