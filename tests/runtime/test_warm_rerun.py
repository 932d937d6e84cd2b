"""The reproducers of the warm-cache crash: each program runs twice in new processes against one
cache; the second run must load everything from the cache (no transpile, no compile) and print
the same numbers. Before the fix the second run died with SIGSEGV (serial kernels linked against
Numba's threading-layer symbols before that layer was launched)."""
import os
import subprocess
import sys
import textwrap

import numpy as np

import pytest

pytestmark = pytest.mark.uncached  # programs with caches of their own

TWO_D = textwrap.dedent("""
    import numpy as np, weft as wp
    from weft.runtime.cache import STATS
    @wp.kernel
    def k(x: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
        i = wp.tid()
        out[i, 0] = wp.sin(x[i, 0])
        out[i, 1] = wp.cos(x[i, 1])
    n = 64
    x = wp.array(np.full((n, 2), 0.5, np.float32), dtype=float, requires_grad=True)
    out = wp.zeros((n, 2), dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(k, dim=n, inputs=[x], outputs=[out])
    tape.backward(grads={out: wp.array(np.ones((n, 2), np.float32), dtype=float)})
    print(x.grad.numpy()[0].tolist())
    print(len(STATS["transpiled"]), len(STATS["compiled"]))
""")

SPRING = textwrap.dedent("""
    import sys
    sys.path.insert(0, {examples!r})
    import numpy as np, weft as wp
    import spring
    from weft.runtime.cache import STATS
    n = 4
    rng = np.random.default_rng(42)
    x = wp.array(rng.random((n, 3)), dtype=wp.vec3, requires_grad=True)
    v = wp.array(rng.random((n, 3)), dtype=wp.vec3, requires_grad=True)
    x_out = wp.zeros(n, dtype=wp.vec3, requires_grad=True)
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    tape = wp.Tape()
    with tape:
        wp.launch(spring.step, dim=n, inputs=[x, v, 0.01], outputs=[x_out])
        wp.launch(spring.loss_kernel, dim=n, inputs=[x_out, loss])
    tape.backward(loss)
    print(loss.numpy().tolist(), x.grad.numpy().round(5).tolist())
    print(len(STATS["transpiled"]), len(STATS["compiled"]))
""")

# forward mode loads the module holding the tangent kernels (a launch's leaves them out): the
# second run loads both from the cache
JVP = textwrap.dedent("""
    import numpy as np, weft as wp
    from weft.runtime.cache import STATS
    @wp.kernel
    def k(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = wp.sin(x[i]) * x[i]
    n = 16
    x = wp.array(np.linspace(0.0, 1.0, n, dtype=np.float32), requires_grad=True)
    out = wp.zeros(n, dtype=float, requires_grad=True)
    wp.launch(k, dim=n, inputs=[x], outputs=[out])
    t = wp.jvp(k, n, inputs=[x], outputs=[out], tangents={x: wp.ones(n, dtype=float)})
    print(out.numpy()[[1, 15]].tolist() + t[out].numpy()[[1, 15]].tolist())
    print(len(STATS["transpiled"]), len(STATS["compiled"]))
""")

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")


@pytest.mark.parametrize("program,opt", [
    (TWO_D, None), (SPRING.format(examples=os.path.abspath(EXAMPLES)), None),
    # unoptimised, a kernel calling a func kept a dead load of its process address, and Numba
    # would not cache it: compiled again in every process
    # (numba_start.drop_dead_globals_when_unoptimised)
    (SPRING.format(examples=os.path.abspath(EXAMPLES)), "0"), (JVP, None)],
    ids=["array2d-sin-cos", "spring-4-particles", "spring-at-numba-opt-0", "jvp"])
def test_second_run_on_a_warm_cache(tmp_path, program, opt):
    path = tmp_path / "prog.py"
    path.write_text(program)
    env = {k: v for k, v in os.environ.items() if k not in ("WEFT_EXPECT_WARM", "NUMBA_OPT")}
    env["WEFT_CACHE_DIR"] = str(tmp_path / "cache")
    if opt is not None:
        env["NUMBA_OPT"] = opt
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                           timeout=300)
        assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-2000:]}"
        runs.append(r.stdout.splitlines())
    assert runs[0][:-1] == runs[1][:-1]
    assert runs[0][-1] != "0 0" and runs[1][-1] == "0 0"
    if program is TWO_D:
        assert [round(v, 4) for v in eval(runs[0][0])] == [0.8776, -0.4794]
    if program is JVP:  # x sin x and its derivative sin x + x cos x at 1/15 and 1
        x = np.array([1.0 / 15.0, 1.0])
        np.testing.assert_allclose(eval(runs[0][0]), np.concatenate(
            [x * np.sin(x), np.sin(x) + x * np.cos(x)]), rtol=1e-6, atol=1e-7)
