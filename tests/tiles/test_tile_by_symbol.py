"""Kernels call the tile helpers that copy, transpose and transform whole tiles by symbol
(``weft.native.bysymbol``): the kernel's module holds only a declaration of each. A kernel
cached in one process must meet the same compiled helper in the next; when the helper was
compiled again (its symbol differs), the cached kernel is refused and compiled again: never an
unresolved symbol, never a crash."""
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
    import os
    import numpy as np, numba, weft as wp
    from weft.runtime.cache import STATS
    if os.environ.get("SHIFT_IDS"):  # compile something first: Numba's ids of later compiles move
        for k in range(3):
            numba.njit(lambda x: x + k)(1)
    @wp.kernel
    def turn(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
        i, j = wp.tid()
        t = wp.tile_load(x, shape=(4, 4), offset=(i * 4, j * 4))
        wp.tile_store(y, wp.tile_transpose(t), offset=(j * 4, i * 4))
    x = np.arange(64.0, dtype=np.float32).reshape(8, 8)
    y = wp.zeros((8, 8), dtype=float)
    wp.launch_tiled(turn, dim=(2, 2), inputs=[wp.array(x, dtype=float)], outputs=[y],
                    block_dim=16)
    print(bool(np.array_equal(y.numpy(), x.T)))
    print(len(STATS["compiled"]) > 0)
""")


def test_a_kernel_meets_a_recompiled_query_and_compiles_again(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if k != "WEFT_EXPECT_WARM"}
    env.update(WEFT_CACHE_DIR=str(tmp_path / "cache"), WEFT_BACKGROUND_COMPILE="0",
               WEFT_TIERED_COMPILE="0",
               # the shipped store unused: the helpers compile into this cache
               WEFT_SHIPPED_COLLECT=str(tmp_path / "collect"))
    os.makedirs(env["WEFT_SHIPPED_COLLECT"])

    def run(**extra):
        r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                           env=dict(env, **extra), timeout=600)
        assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}"
        return r.stdout.splitlines()

    want = "True"
    cold = run()
    assert cold == [want, "True"]
    warm = run()
    assert warm == [want, "False"]  # nothing compiled: the kernel and the helpers loaded
    # the transpose's machine code lost: it compiles again, under another symbol
    lost = glob.glob(str(tmp_path / "cache" / "numba" / "**" / "*tile_transpose*"),
                     recursive=True)
    assert lost
    for p in lost:
        os.remove(p)
    again = run(SHIFT_IDS="1")
    assert again == [want, "True"]  # the kernel refused and compiled again, not crashed
    assert run() == [want, "False"]


def test_tile_copies_and_transposes_are_called_by_symbol():
    """The kernel's module declares the helpers and does not define them."""
    @wp.kernel
    def swap(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
        i = wp.tid()
        t = wp.tile_load(x, shape=(2, 4), offset=(i * 2, 0))
        wp.tile_store(y, wp.tile_transpose(t), offset=(0, i * 2))

    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    y = wp.zeros((4, 4), dtype=float)
    wp.launch_tiled(swap, dim=2, inputs=[wp.array(x, dtype=float)], outputs=[y], block_dim=8,
                    device="cpu")
    np.testing.assert_array_equal(y.numpy(), x.T)
    names = ("tile_load2", "tile_store2", "tile_transpose")
    assert set(names) <= helpers.TILES_BY_SYMBOL
    mod = swap.compiled("cpu").module
    # compiled again here (cached code cannot be inspected), for the launch's argument types
    irs = []
    for n in vars(mod):
        disp = getattr(mod, n)
        if n.startswith("swap__fwd") and hasattr(disp, "signatures"):
            for sig in disp.signatures:
                fresh = numba.njit(**disp.targetoptions)(disp.py_func)
                fresh.compile(sig)
                irs += fresh.inspect_llvm().values()
    assert irs  # the launch ran one of them
    for name in names:
        lines = [ln for ir in irs for ln in ir.splitlines()
                 if name in ln and ln.startswith(("declare", "define"))]
        assert lines and all(ln.startswith("declare") for ln in lines), (name, lines)
