"""The whole kernel corpus on the CUDA target: every corpus test runs again with "cuda" as the
default device (Numba's simulator in CI), checking the same independent references, and every
corpus kernel's CUDA forward, adjoint and tangent compile to PTX for sm_90."""
import importlib
import inspect
import os
import subprocess
import sys

import pytest

import weft as wp

MODULES = ["tests.transpiler.test_corpus", "tests.transpiler.test_corpus_funcs",
           "tests.transpiler.test_corpus_vec"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.cudasim


def _corpus_tests():
    out = []
    for name in MODULES:
        mod = importlib.import_module(name)
        for fname, fn in sorted(vars(mod).items()):
            if fname.startswith("test_") and callable(fn) and not getattr(fn, "pytestmark", None):
                if not inspect.signature(fn).parameters:
                    out.append(pytest.param(fn, id=f"{name.rsplit('.', 1)[-1]}::{fname}"))
    return out


@pytest.mark.parametrize("test", _corpus_tests())
def test_corpus_on_cuda(test):
    with wp.ScopedDevice("cuda"):
        test()


PTX = """
import importlib, numpy as np, weft as wp
from weft import types as T
from weft.runtime.ptx import compile_ptx
count = 0
for name in {modules!r}:
    mod = importlib.import_module(name)
    for k in [v for v in vars(mod).values() if isinstance(v, wp.Kernel)]:
        args = []
        ck = k.compiled("cuda")
        for _, t in ck.user_params:
            if isinstance(t, T.ArrayType):
                args.append(wp.zeros((4,) * t.ndim, dtype=t.dtype))
            elif T.is_composite(t):
                args.append(np.zeros(t._length_))
            else:
                args.append(3 if T.is_int(t) else 0.5)
        dims = (4,) * max(ck.abi.tid_dims, 1)
        ptx = compile_ptx(k, args, dims=dims)
        assert all(".target sm_90" in text for text in ptx.values()), k.key
        count += 1
print("compiled", count)
"""


@pytest.mark.ptx
def test_every_corpus_kernel_compiles_to_ptx():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = ROOT
    r = subprocess.run([sys.executable, "-c", PTX.format(modules=MODULES)], capture_output=True,
                       text=True, env=env, cwd=ROOT, timeout=1500)
    assert r.returncode == 0, r.stderr[-3000:]
    assert int(r.stdout.split()[-1]) >= 20
