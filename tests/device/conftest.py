"""The device tests run on the host simulator.

ufuncgen._device picks its backend once, at the first call that needs one, from
UFUNCGEN_DEVICE; setting it here, while pytest collects this directory and before any test
runs, makes the whole session use the simulator.  Tests of the other backends run in
subprocesses with their own environment.
"""
import os

os.environ["UFUNCGEN_DEVICE"] = "sim"
