"""Code loaded from the disk cache runs its own callees, never a function of the same name that
this process compiled (``numba_start.unique_function_ids``).

Numba names a function by module, qualified name, argument types and an id it counts from 1 in
each process. Two programs that run the same steps count alike, so the lambda one program's
``@overload`` returned (cached) and another lambda of that factory, compiled fresh by a second
program, got one name; LLVM bound the name to the body it met first, and the cached function
ran the fresh one's body. Before the fix, each program pair below printed the second
operation's result for the first (``a - v`` for ``a + v``; ``atomic_sub`` for ``atomic_add``,
values and gradients). The callees are separate functions only where LLVM does not inline them:
always at ``NUMBA_OPT=0`` (the suite's level), for large callees at any level."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.uncached  # programs with caches of their own

FACTORY = textwrap.dedent("""
    import numba
    from numba.extending import overload


    def make(sign):
        def stub(a, v):
            pass

        @overload(stub)
        def ov(a, v):
            return lambda a, v: a + v * sign
        return stub


    add = make(1.0)
    sub = make(-1.0)


    @numba.njit(cache=True)
    def use_add(a, v):
        return add(a, v)


    @numba.njit(cache=True)
    def use_sub(a, v):
        return sub(a, v)
""")

KERNELS = textwrap.dedent("""
    import numpy as np
    import weft as wp


    @wp.kernel
    def acc_add(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(out, i % 2, x[i])


    @wp.kernel
    def acc_sub(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_sub(out, i % 2, x[i])


    def run(k):
        n = 64
        x = wp.array(np.arange(n, dtype=np.float32), dtype=float, requires_grad=True)
        out = wp.zeros(2, dtype=float, requires_grad=True)
        tape = wp.Tape()
        with tape:
            wp.launch(k, dim=n, inputs=[x], outputs=[out])
        tape.backward(grads={out: wp.array(np.array([1.0, 2.0], np.float32), dtype=float)})
        return out.numpy().tolist() + x.grad.numpy().tolist()
""")


def _programs(tmp_path, module, first, second):
    """Runs ``first`` then ``second`` (Python sources importing ``module``, written as
    ``m.py``) in new processes on one fresh cache, unoptimised; their printed lines."""
    (tmp_path / "m.py").write_text(module)
    env = {k: v for k, v in os.environ.items() if k not in ("WEFT_EXPECT_WARM",)}
    env.update(NUMBA_OPT="0", WEFT_CACHE_DIR=str(tmp_path / "cache"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path),
                                                        env.get("PYTHONPATH")])))
    out = []
    for code in (first, second):
        r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                           text=True, env=env, timeout=300)
        assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
        out.append(r.stdout.splitlines())
    return out


def test_cached_function_calls_its_own_overload_implementation(tmp_path):
    first, second = _programs(tmp_path, FACTORY, """
        import weft, m
        print(m.use_add(10.0, 1.0))
    """, """
        import weft, m
        print(m.use_sub(10.0, 1.0))
        print(m.use_add(10.0, 1.0))  # from the cache
        print(sum(m.use_add.stats.cache_hits.values()), sum(m.use_sub.stats.cache_hits.values()))
    """)
    assert first == ["11.0"]
    assert second == ["9.0", "11.0", "1 0"]  # (before the fix: 9.0 twice)


def test_cached_kernel_runs_its_own_atomic_operation(tmp_path):
    first, second = _programs(tmp_path, KERNELS, """
        import m
        print(m.run(m.acc_add))
    """, """
        import m
        from weft.runtime.cache import STATS
        print(m.run(m.acc_sub))
        compiled = len(STATS["compiled"])
        print(m.run(m.acc_add))  # from the cache
        print(len(STATS["compiled"]) - compiled)
    """)
    x = np.arange(64.0)
    sums = [x[0::2].sum(), x[1::2].sum()]
    grad = np.tile([1.0, 2.0], 32)  # d out[i % 2] / d x[i] = 1, times out's seed
    expect_add = sums + grad.tolist()
    expect_sub = [-s for s in sums] + (-grad).tolist()
    np.testing.assert_allclose(eval(first[0]), expect_add)
    np.testing.assert_allclose(eval(second[0]), expect_sub)
    np.testing.assert_allclose(eval(second[1]), expect_add)  # (before the fix: the sums of acc_sub)
    assert second[2] == "0"  # acc_add came from the cache: nothing compiled for it


def test_function_ids_are_drawn_at_random():
    # what the two program pairs rely on, whatever order of compiles lines their ids up
    import weft  # noqa: F401
    from numba.core.bytecode import FunctionIdentity
    ids = [FunctionIdentity.from_function(_programs).unique_id for _ in range(4)]
    assert len(set(ids)) == 4 and all(0 <= i < 2 ** 63 for i in ids)
    assert max(ids) - min(ids) > 3  # (Numba's own count: consecutive)
