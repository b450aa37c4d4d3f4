"""fastgeo's functions, from its installed wheel, against NumPy computing the same formulas.

Run after installing the wheel (tools/downstream.sh does both):  python -m pytest tests
"""

import importlib.resources
import pickle

import numpy as np
import pytest

import fastgeo

DTYPES = [np.float32, np.float64]
SHAPES = [(), (0,), (1,), (7,), (3, 5), (2, 1, 257)]
SPECIALS = [0.0, -0.0, 1.0, -1.5, np.pi, -np.pi, np.inf, -np.inf, np.nan]


def tolerance(dtype):
    """Differences allowed between two libms (ufuncgen's loops may call libmvec: <= 4 ULP)."""
    return {"rtol": 2e-5, "atol": 2e-5} if dtype == np.float32 else {"rtol": 1e-11, "atol": 1e-12}


def assert_matches(actual, expected, dtype):
    assert actual.dtype == expected.dtype == dtype
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, **tolerance(dtype))   # NaN only where NaN
    zeros = expected == 0
    np.testing.assert_array_equal(np.signbit(actual[zeros]), np.signbit(expected[zeros]))


def haversine_reference(lat1, lon1, lat2, lon2):
    s_lat = np.sin((lat2 - lat1) * lat1.dtype.type(0.5))
    s_lon = np.sin((lon2 - lon1) * lat1.dtype.type(0.5))
    h = s_lat * s_lat + np.cos(lat1) * np.cos(lat2) * s_lon * s_lon
    h = np.where(h > 1, lat1.dtype.type(1), h)
    return 2 * np.arcsin(np.sqrt(h))


def bearing_reference(lat1, lon1, lat2, lon2):
    dlon = lon2 - lon1
    y = np.sin(dlon) * np.cos(lat2)
    x = np.cos(lat1) * np.sin(lat2) - np.sin(lat1) * np.cos(lat2) * np.cos(dlon)
    return np.arctan2(y, x)


def random_points(rng, shape, dtype):
    lat = rng.uniform(-np.pi / 2, np.pi / 2, shape).astype(dtype)
    lon = rng.uniform(-np.pi, np.pi, shape).astype(dtype)
    return lat, lon


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_haversine_and_bearing_match_numpy_for_random_points(dtype, shape):
    rng = np.random.default_rng(14)
    lat1, lon1 = random_points(rng, shape, dtype)
    lat2, lon2 = random_points(rng, shape, dtype)
    args = [np.asarray(a) for a in (lat1, lon1, lat2, lon2)]
    assert_matches(np.asarray(fastgeo.haversine(*args)), haversine_reference(*args), dtype)
    assert_matches(np.asarray(fastgeo.initial_bearing(*args)), bearing_reference(*args), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_haversine_and_bearing_match_numpy_on_every_combination_of_special_values(dtype):
    grids = np.meshgrid(*[np.array(SPECIALS, dtype=dtype)] * 4, indexing="ij")
    args = [g.ravel() for g in grids]             # 9**4 combinations, NaN, +-Inf and -0.0 among them
    with np.errstate(invalid="ignore"):
        expected_angle = haversine_reference(*args)
        expected_bearing = bearing_reference(*args)
        angle = fastgeo.haversine(*args)
        bearing = fastgeo.initial_bearing(*args)
    assert_matches(angle, expected_angle, dtype)
    assert_matches(bearing, expected_bearing, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_haversine_gives_zero_for_a_point_and_pi_for_its_antipode(dtype):
    lat = np.array([0.0, 0.5, -1.2, np.pi / 2], dtype=dtype)
    lon = np.array([0.0, -2.0, 3.0, 1.0], dtype=dtype)
    same = fastgeo.haversine(lat, lon, lat, lon)
    np.testing.assert_array_equal(same, np.zeros(4, dtype))
    assert not np.signbit(same).any()
    antipode = fastgeo.haversine(lat[:3], lon[:3], -lat[:3], lon[:3] + dtype(np.pi))
    np.testing.assert_allclose(antipode, np.full(3, np.pi, dtype), rtol=1e-3 if dtype == np.float32 else 1e-7)


def test_haversine_times_the_earth_radius_gives_a_known_distance():
    # Paris (48.8566 N, 2.3522 E) to New York (40.7128 N, 74.0060 W): about 5837 km.
    lat1, lon1, lat2, lon2 = np.radians([48.8566, 2.3522, 40.7128, -74.0060])
    km = fastgeo.haversine(lat1, lon1, lat2, lon2) * fastgeo.EARTH_RADIUS_M / 1000
    assert abs(km - 5837) < 5


def test_haversine_broadcasts_keeps_float32_and_promotes_integers_to_float64():
    lat = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    result = fastgeo.haversine(lat, np.float32(0), np.float32(0.25), np.zeros((1, 3), np.float32))
    assert result.shape == (2, 3) and result.dtype == np.float32
    assert fastgeo.haversine(np.arange(3), 0, 1, 0).dtype == np.float64


def test_haversine_writes_into_out_and_follows_strides():
    rng = np.random.default_rng(5)
    lat, lon = random_points(rng, (8, 10), np.float64)
    out = np.empty((8, 5))
    result = fastgeo.haversine(lat[:, ::2], lon[:, ::2], lat[:, 1::2], lon[:, 1::2], out=out)
    assert result is out
    assert_matches(out, haversine_reference(lat[:, ::2], lon[:, ::2], lat[:, 1::2], lon[:, 1::2]), np.float64)


def polygon_area_reference(vertices):
    x, y = vertices[..., 0], vertices[..., 1]
    twice = np.sum(x * np.roll(y, -1, axis=-1) - np.roll(x, -1, axis=-1) * y, axis=-1)
    return np.asarray(twice * vertices.dtype.type(0.5))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("stack, n", [((), 3), ((), 0), ((4,), 1), ((4,), 2), ((5,), 6), ((3, 2), 50), ((0,), 4)])
def test_polygon_area_matches_numpy_for_random_polygons(dtype, stack, n):
    vertices = np.random.default_rng(n).uniform(-10, 10, stack + (n, 2)).astype(dtype)
    assert_matches(np.asarray(fastgeo.polygon_area(vertices)), polygon_area_reference(vertices), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_polygon_area_is_positive_counter_clockwise_and_negative_clockwise(dtype):
    square = np.array([[0, 0], [2, 0], [2, 2], [0, 2]], dtype=dtype)
    np.testing.assert_array_equal(fastgeo.polygon_area(square), dtype(4))
    np.testing.assert_array_equal(fastgeo.polygon_area(square[::-1]), dtype(-4))   # strided view
    np.testing.assert_array_equal(fastgeo.polygon_area(np.empty((0, 2), dtype)), dtype(0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_polygon_area_propagates_nan_and_infinity_as_numpy_does(dtype):
    triangle = np.array([[0, 0], [1, 0], [0, 1]], dtype=dtype)
    cases = []
    for special in (np.nan, np.inf, -np.inf, -0.0):
        for i in range(3):
            for k in range(2):
                t = triangle.copy()
                t[i, k] = special
                cases.append(t)
    polygons = np.stack(cases)
    with np.errstate(invalid="ignore"):
        expected = polygon_area_reference(polygons)
        actual = fastgeo.polygon_area(polygons)
    assert_matches(actual, expected, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3,), (0, 3), (1, 3), (4, 3), (2, 7, 3)])
def test_cross_equals_numpy_cross_bit_for_bit(dtype, shape):
    rng = np.random.default_rng(len(shape))
    a = rng.standard_normal(shape).astype(dtype)
    b = rng.standard_normal(shape).astype(dtype)
    np.testing.assert_array_equal(fastgeo.cross(a, b), np.cross(a, b))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_equals_numpy_cross_on_special_values_including_signed_zeros(dtype):
    values = np.array(SPECIALS, dtype=dtype)
    rng = np.random.default_rng(3)
    a = rng.choice(values, (2000, 3))
    b = rng.choice(values, (2000, 3))
    with np.errstate(invalid="ignore"):
        expected = np.cross(a, b)
        actual = fastgeo.cross(a, b)
    np.testing.assert_array_equal(actual, expected)
    np.testing.assert_array_equal(np.signbit(actual), np.signbit(expected))


def test_cross_broadcasts_one_vector_against_many_and_may_write_over_its_input():
    a = np.random.default_rng(1).standard_normal((6, 3))
    z = np.array([0.0, 0.0, 1.0])
    expected = np.cross(a, z)
    np.testing.assert_array_equal(fastgeo.cross(a, z), expected)
    result = fastgeo.cross(a, z, out=a)
    assert result is a
    np.testing.assert_array_equal(a, expected)


def test_cross_refuses_vectors_that_are_not_three_long():
    with pytest.raises(ValueError):
        fastgeo.cross(np.ones(2), np.ones(2))


def test_the_wheel_ships_the_type_stub_and_documented_functions():
    package = importlib.resources.files("fastgeo")
    stub = package.joinpath("_ufuncs.pyi").read_text()
    for name in fastgeo.__all__:
        assert f"\n{name}: _Function_{name}\n" in stub
        assert "signatures/" in getattr(fastgeo, name).__doc__
    assert package.joinpath("py.typed").is_file()


def test_the_functions_belong_to_fastgeo_and_pickle_by_that_name():
    for name in fastgeo.__all__:
        function = getattr(fastgeo, name)
        assert function.__module__ == "fastgeo._ufuncs"
        assert pickle.loads(pickle.dumps(function)) is function
