"""Integer loops of the shipped examples never kill the process: every integer loop of every
seed function, called in a child process on zeros, -1, the type's extremes and mixtures
(what would trap an unguarded `/` or `%`), exits normally.  The generator's integer-division
warning (tests/gen/test_diagnostics_golden.py) finds no unguarded division in the seed file."""
import subprocess
import sys
import textwrap


def test_every_integer_loop_of_the_examples_survives_zero_and_extreme_operands():
    script = textwrap.dedent("""
        import itertools
        import numpy as np
        import ufuncgen.examples as ex
        calls = 0
        for name in sorted(dir(ex)):
            fn = getattr(ex, name)
            if not hasattr(fn, "ufunc") or fn.signature is not None:
                continue
            for types in fn.types:
                ins = types.split("->")[0]
                if not all(np.dtype(c).kind in "iu" for c in ins):
                    continue
                info = np.iinfo(np.dtype(ins[0]))
                values = [0, -1, 1, 2, info.min, info.max] if info.min < 0 else [0, 1, 2, info.max]
                for combo in itertools.product(values, repeat=fn.nin):
                    args = [np.full(37, v, dtype=np.dtype(c)) for v, c in zip(combo, ins)]
                    with np.errstate(all="ignore"):
                        fn(*args)
                        fn(*(a[:1] for a in args))
                    calls += 1
        print(calls)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 0
