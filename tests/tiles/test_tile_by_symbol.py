"""Generated code calls the tile helpers by symbol (``weft.runtime.numba_lowering``): a kernel's
module declares each helper it calls and does not define it, so LLVM does not optimise the
helper again inside every kernel. The symbol names the helper and its types only, so a kernel
cached in one process meets the helper in the next even when the helper itself was compiled
again there: never an unresolved symbol, never a crash."""
import glob
import os
import subprocess
import sys
import textwrap
import types

import numba
import numpy as np
import pytest

import weft as wp
from weft.runtime import numba_lowering
from weft.runtime.numba_start import generated_code_compiler

PROGRAM = textwrap.dedent("""
    import numpy as np, weft as wp
    from weft.runtime.cache import STATS

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
    print(sorted({n.split(".")[0] for n in STATS["compiled"]}))
""")



@pytest.mark.uncached  # runs programs with a cache of their own
def test_a_cached_kernel_meets_its_helpers_compiled_again(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if k != "WEFT_EXPECT_WARM"}
    env.update(WEFT_CACHE_DIR=str(tmp_path / "cache"), NUMBA_CACHE_DIR=str(tmp_path / "nb"),
               WEFT_BACKGROUND_COMPILE="0", WEFT_TIERED_COMPILE="0",
               # the shipped store unused: the helpers compile into this cache
               WEFT_SHIPPED_COLLECT=str(tmp_path / "collect"))
    os.makedirs(env["WEFT_SHIPPED_COLLECT"])

    def run():
        r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                           env=env, timeout=600)
        assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}"
        return r.stdout.splitlines()

    cold = run()
    assert cold[0] == "True" and "weft_generated" in cold[1] and "weft" in cold[1]
    assert run() == ["True", "[]"]  # nothing compiled: the kernel and its helpers loaded
    # the helpers' machine code lost: they compile again; the kernel loads and calls them
    lost = [p for name in ("tile_transpose", "tile_store2")
            for p in glob.glob(str(tmp_path / "**" / f"*{name}*"), recursive=True)]
    assert lost
    for p in lost:
        os.remove(p)
    assert run() == ["True", "['weft']"]


def test_tile_helpers_are_declared_not_linked():
    """The kernel's code declares the helpers it calls and does not define them; linked (the
    switch off), the same code defines them."""
    @wp.kernel
    def swap(x: wp.array2d(dtype=float), y: wp.array2d(dtype=float)):
        i = wp.tid()
        t = wp.tile_load(x, shape=(2, 4), offset=(i * 2, 0))
        wp.tile_store(y, wp.tile_transpose(t) * 2.0, offset=(0, i * 2))

    x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
    y = wp.zeros((4, 4), dtype=float)
    wp.launch_tiled(swap, dim=2, inputs=[wp.array(x, dtype=float)], outputs=[y], block_dim=8,
                    device="cpu")
    np.testing.assert_array_equal(y.numpy(), 2 * x.T)
    mod = swap.compiled("cpu").module
    # the functions the launch compiled (the serial twin, or the threaded chunk)
    ran = [(d, sig) for n, v in vars(mod).items() if n.startswith("swap__fwd")
           for d in (getattr(v, "weft_chunk_of", v),) if hasattr(d, "signatures")
           for sig in d.signatures]
    assert ran

    def irs():
        # compiled again here (cached code cannot be inspected), by the generated code's compiler
        out = []
        for disp, sig in ran:
            # a copy of the function outside the generated module: a warm run's check of
            # compiles (``WEFT_EXPECT_WARM``) counts the generated module's own
            fn = types.FunctionType(disp.py_func.__code__, disp.py_func.__globals__,
                                    disp.py_func.__name__)
            fn.__module__ = __name__
            fresh = numba.njit(pipeline_class=generated_code_compiler(),
                               **{k: v for k, v in disp.targetoptions.items()
                                  if k != "nopython"})(fn)
            fresh.compile(sig)
            out.append(fresh.inspect_llvm(sig))
        return "\n".join(out)

    def lines(ir, name):
        return [ln for ln in ir.splitlines()
                if name in ln and ln.startswith(("declare", "define"))]

    ir = irs()
    for name in ("tile_transpose", "tile_store2"):
        found = lines(ir, name)
        assert found and all(ln.startswith("declare") and "weft_helper." in ln
                             for ln in found), (name, found)
    numba_lowering.HELPERS_BY_SYMBOL = False
    try:
        ir = irs()
    finally:
        numba_lowering.HELPERS_BY_SYMBOL = True
    assert any(ln.startswith("define") for ln in lines(ir, "tile_transpose"))
    assert not any("weft_helper." in ln for ln in ir.splitlines())
