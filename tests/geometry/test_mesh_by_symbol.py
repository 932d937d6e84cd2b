"""Kernels call the mesh queries' tree walks by symbol (``weft.native.bysymbol``): the kernel's
module holds only a declaration of the query. A kernel cached in one process must meet the same
compiled query in the next; when the query was compiled again (its symbol differs), the cached
kernel is refused and compiled again: never an unresolved symbol, never a crash."""
import glob
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

import weft as wp
from weft.native import helpers

pytestmark = pytest.mark.uncached  # programs with caches of their own

PROGRAM = textwrap.dedent("""
    import os, sys
    import numpy as np, numba, weft as wp
    from weft.runtime.cache import STATS
    if os.environ.get("SHIFT_IDS"):  # compile something first: Numba's ids of later compiles move
        for k in range(3):
            numba.njit(lambda x: x + k)(1)
    @wp.kernel
    def cast(mesh: wp.uint64, o: wp.array(dtype=wp.vec3), t: wp.array(dtype=float),
             f: wp.array(dtype=int)):
        i = wp.tid()
        q = wp.mesh_query_ray(mesh, o[i], wp.vec3(0.0, 0.0, -1.0), 10.0)
        if q.result:
            t[i] = q.t
            f[i] = q.face
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], np.float32)
    mesh = wp.Mesh(points=wp.array(v, dtype=wp.vec3), indices=wp.array([0, 1, 2, 1, 3, 2],
                                                                         dtype=int))
    o = np.array([[0.25, 0.25, 2.0], [0.75, 0.75, 1.5], [2.0, 2.0, 1.0]], np.float32)
    t = wp.full(3, -1.0, dtype=float)
    f = wp.full(3, -1, dtype=int)
    wp.launch(cast, 3, [mesh.id, wp.array(o, dtype=wp.vec3), t, f])
    print(t.numpy().tolist(), f.numpy().tolist())
    print(len(STATS["compiled"]) > 0)
""")


def test_a_kernel_meets_a_recompiled_query_and_compiles_again(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if k != "WEFT_EXPECT_WARM"}
    env.update(WEFT_CACHE_DIR=str(tmp_path / "cache"), WEFT_BACKGROUND_COMPILE="0",
               WEFT_TIERED_COMPILE="0",
               # the shipped store unused: the query compiles into this cache
               WEFT_SHIPPED_COLLECT=str(tmp_path / "collect"))
    os.makedirs(env["WEFT_SHIPPED_COLLECT"])

    def run(**extra):
        r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                           env=dict(env, **extra), timeout=600)
        assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}"
        return r.stdout.splitlines()

    want = "[2.0, 1.5, -1.0] [0, 1, -1]"
    cold = run()
    assert " ".join(cold[:1]) == want and cold[1] == "True"
    warm = run()
    assert warm == [want, "False"]  # nothing compiled: the kernel and the query loaded
    # the query's machine code lost: it compiles again, under another symbol
    lost = glob.glob(str(tmp_path / "cache" / "numba" / "**" / "*geo_mesh_ray*"),
                     recursive=True)
    assert lost
    for p in lost:
        os.remove(p)
    again = run(SHIFT_IDS="1")
    assert again == [want, "True"]  # the kernel refused and compiled again, not crashed
    assert run() == [want, "False"]


def test_the_tree_walks_are_called_by_symbol():
    """The kernel's module declares the query and does not define it."""
    @wp.kernel
    def closest(mesh: wp.uint64, p: wp.array(dtype=wp.vec3), d: wp.array(dtype=float)):
        i = wp.tid()
        q = wp.mesh_query_point_no_sign(mesh, p[i], 10.0)
        if q.result:
            d[i] = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - p[i])

    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    mesh = wp.Mesh(points=wp.array(v, dtype=wp.vec3), indices=wp.array([0, 1, 2], dtype=int))
    d = wp.zeros(2, dtype=float)
    p = np.array([[0.2, 0.2, 0.5], [2.0, 0.0, 0.0]], np.float32)
    wp.launch(closest, 2, [mesh.id, wp.array(p, dtype=wp.vec3), d], device="cpu")
    np.testing.assert_allclose(d.numpy(), [0.5, 1.0], rtol=1e-6)
    assert "geo_mesh_point_no_sign" in helpers.BY_SYMBOL
    mod = closest.compiled("cpu").module
    # compiled again here (cached code cannot be inspected), for the launch's argument types
    irs = []
    for n in ("closest__fwd_chunk", "closest__fwd_serial"):
        disp = getattr(mod, n)
        for sig in disp.signatures:
            fresh = numba.njit(**disp.targetoptions)(disp.py_func)
            fresh.compile(sig)
            irs += fresh.inspect_llvm().values()
    assert irs  # the launch ran one of them
    for ir in irs:
        declared = [ln for ln in ir.splitlines() if "geo_mesh_point_no_sign" in ln and
                    ln.startswith(("declare", "define"))]
        assert declared and all(ln.startswith("declare") for ln in declared), declared
