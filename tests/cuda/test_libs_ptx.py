"""weft.sparse and weft.optim.linear on the CUDA target: every kernel their operations launch
(assembly, products, transposes, the four Krylov solvers with a preconditioner) compiles to PTX
for sm_90, forward, adjoint and tangent. Their results on a CUDA device are checked under
Numba's simulator in tests/sparse and tests/linear."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PTX = """
import inspect
import numpy as np
import weft as wp
from weft.runtime import launch as L
from weft.runtime.ptx import compile_ptx

seen = {}
original = L.launch
signature = inspect.signature(original)


def spy(*args, **kwargs):  # records each kernel with the arguments of its first launch
    b = signature.bind(*args, **kwargs)
    kernel, dim = b.arguments["kernel"], b.arguments["dim"]
    if kernel not in seen:
        seen[kernel] = (list(b.arguments.get("inputs", ())) + list(b.arguments.get("outputs", ())),
                        dim)
    return original(*args, **kwargs)


L.launch = wp.launch = spy
import weft.sparse as sp
import weft.optim.linear as lin

rng = np.random.default_rng(0)
for dtype in (wp.float32, wp.float64):
    n = 6
    rows = wp.array(np.repeat(np.arange(n), 2).astype(np.int32))
    cols = wp.array(np.concatenate([[i, (i + 1) % n] for i in range(n)]).astype(np.int32))
    for shape in ((1, 1), (2, 2)):
        vals = rng.standard_normal((2 * n, *shape)) + 4 * np.eye(shape[0])
        A = sp.bsr_from_triplets(n, n, rows, cols, wp.array(
            vals[:, 0, 0] if shape == (1, 1) else vals, dtype=dtype if shape == (1, 1)
            else wp.types.matrix(shape, dtype)))
        x = wp.array(rng.standard_normal((n, *shape[1:])) if shape != (1, 1)
                     else rng.standard_normal(n),
                     dtype=dtype if shape == (1, 1) else wp.types.vector(shape[0], dtype))
        y = sp.bsr_mv(A, x)
        sp.bsr_mv(A, y, transpose=True)
        sp.bsr_mm(A, A)              # off a tape: the one-pass product
        if dtype == wp.float32:      # on a tape: topology, then the value kernel (one scalar
            with wp.Tape():          # type: the float64 twins are the same code)
                sp.bsr_mm(A, A)
        sp.bsr_axpy(A, sp.bsr_copy(A), alpha=2.0)
        sp.bsr_scale(sp.bsr_transposed(A), 0.5)
        sp.bsr_get_diag(A)
    S = sp.bsr_from_triplets(n, n, wp.array(np.arange(n, dtype=np.int32)),
                             wp.array(np.arange(n, dtype=np.int32)),
                             wp.array(np.arange(1.0, n + 1.0), dtype=dtype))
    b = wp.array(np.ones(n), dtype=dtype)
    M = lin.preconditioner(S, "diag")
    for solve in (lin.cg, lin.cr, lin.bicgstab, lin.gmres):
        solve(S, b, wp.zeros(n, dtype=dtype), tol=1e-6, maxiter=20, M=M)
count = 0
for kernel, (args, dim) in seen.items():
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    ptx = compile_ptx(kernel, args, dims=dims)
    assert all(".target sm_90" in text for text in ptx.values()), kernel.key
    count += 1
print("compiled", count)
"""


@pytest.mark.ptx
def test_sparse_and_solver_kernels_compile_to_ptx():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    env["PYTHONPATH"] = ROOT
    r = subprocess.run([sys.executable, "-c", PTX], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=1500)
    assert r.returncode == 0, r.stderr[-3000:]
    assert int(r.stdout.split()[-1]) >= 10
