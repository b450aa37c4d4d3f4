"""Hypothesis profiles for the generator fuzzing (tests/gen/test_fuzz.py), named `gen-fuzz-*`
so as not to clash with the property tests' profiles.  Choose one with
HYPOTHESIS_PROFILE=thorough (or gen-fuzz-thorough); anything else, or nothing, runs gen-fuzz-ci."""
import os

from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                      HealthCheck.data_too_large])
# The CI profile draws the same examples on every run, so its verdict does not change from
# one run to the next; the thorough one explores afresh each time.
settings.register_profile("gen-fuzz-ci", max_examples=150, derandomize=True, **_COMMON)
settings.register_profile("gen-fuzz-thorough", max_examples=5000, derandomize=False, **_COMMON)

# What test_fuzz.py reads (conftest modules cannot be imported from tests/gen, no package).
FUZZ_PROFILE = ("gen-fuzz-thorough"
                if os.environ.get("HYPOTHESIS_PROFILE", "") in ("thorough", "gen-fuzz-thorough")
                else "gen-fuzz-ci")
os.environ.setdefault("UFUNCGEN_FUZZ_PROFILE", FUZZ_PROFILE)
