"""Tiered compiles (wp.config.tiered_compile, weft.runtime.background.tier): while a kernel's
threaded CPU entry is not in the disk cache, launches run its chunk over the whole launch (the
serial twin where the chunk takes more than the entry's parameters) and the helper process
compiles the threaded entry, which later launches use; a warm cache starts threaded. The test
session turns tiering off (tests/conftest.py); these programs turn it on."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from .ahead_kernels import HERE, ROOT

pytestmark = pytest.mark.uncached  # programs with caches of their own

PROGRAM = r"""
import json, sys, time
sys.path.insert(0, {here!r})
import numpy as np
import weft as wp
from weft.runtime import background, cache
import ahead_kernels as ak
wp.config.quiet = True
x = wp.array(np.arange(300, dtype=np.float32) / 100, requires_grad=True)
y = wp.zeros(300, dtype=float, requires_grad=True)
s = wp.zeros(1, dtype=float, requires_grad=True)

def step():
    y.zero_()
    s.zero_()
    wp.launch(ak.square, 300, inputs=[x, y])
    wp.launch(ak.total, 300, inputs=[y, s, 0.5])
    return float(s.numpy()[0])

tape = wp.Tape()
with tape:
    first = step()
if {finish}:  # (else an adjoint the helper has not begun is compiled here)
    assert background.finish(600)
tape.backward(s)
grad = x.grad.numpy().tolist()
early = [c.rsplit(".", 1)[1] for c in cache.STATS["compiled"] if c.startswith("weft_generated.")]
if {finish}:
    assert background.finish(600)  # the helper's compiles
second = step()
ck = ak.square.compiled("cpu")
threaded = [ck.entry("forward", "cpu") in ck.called, ak.total.compiled("cpu").entry(
    "forward", "cpu") in ak.total.compiled("cpu").called]
late = [c.rsplit(".", 1)[1] for c in cache.STATS["compiled"] if c.startswith("weft_generated.")]
print(json.dumps({{"first": first, "second": second, "early": early, "late": late, "grad": grad,
                  "threaded": threaded, "helper": background._proc is not None}}))
"""


def _run(cache, finish=True, **env):
    env = dict(os.environ, WEFT_CACHE_DIR=str(cache), **{"WEFT_TIERED_COMPILE": "1", **env},
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", PROGRAM.format(here=HERE, finish=finish)],
                         env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.cold
def test_serial_twin_first_then_threaded_then_warm(tmp_path):
    expect = 0.5 * float(((np.arange(300, dtype=np.float64) / 100) ** 2).sum())
    res = _run(tmp_path / "cache")
    assert res["first"] == pytest.approx(expect, rel=1e-5)
    assert res["second"] == pytest.approx(expect, rel=1e-5)
    np.testing.assert_allclose(res["grad"], np.arange(300) / 100, rtol=1e-6)
    # square's first launches ran its chunk over the whole launch (compiled here; the helper
    # compiled its adjoint's chunk and the threaded entries, which load the chunks from the
    # cache); total adds into per-thread copies, whose sum one thread would round differently:
    # not tiered, its threaded forward compiled here from the start
    assert res["helper"] and sorted(res["early"]) == ["square__fwd_chunk", "total__fwd"]
    assert res["threaded"] == [True, True]
    assert sorted(res["late"]) == sorted(res["early"])
    warm = _run(tmp_path / "cache")  # a new process: the threaded entries from the start
    assert warm["first"] == pytest.approx(expect, rel=1e-5)
    assert not warm["helper"] and warm["early"] == [] and warm["threaded"] == [True, True]
    assert warm["grad"] == res["grad"]  # (the chunk's first tier and the threaded entry agree)


@pytest.mark.cold
def test_tiering_off_compiles_the_threaded_entries_here(tmp_path):
    res = _run(tmp_path / "cache", WEFT_TIERED_COMPILE="0")
    # the threaded forwards here; the threaded adjoints by the helper (background_compile)
    assert sorted(res["early"]) == ["square__fwd", "total__fwd"]
    np.testing.assert_allclose(res["grad"], np.arange(300) / 100, rtol=1e-6)


def test_tiering_on_without_jit(tmp_path):
    """Under NUMBA_DISABLE_JIT (plain Python kernels) tiering has nothing to do: launches run."""
    prog = ("import sys; sys.path.insert(0, %r)\n"
            "import numpy as np, weft as wp, ahead_kernels as ak\n"
            "x = wp.array(np.ones(300, np.float32)); y = wp.zeros(300, dtype=float)\n"
            "wp.launch(ak.square, 300, inputs=[x, y]); print(float(y.numpy().sum()))" % HERE)
    env = dict(os.environ, WEFT_CACHE_DIR=str(tmp_path / "cache"), WEFT_TIERED_COMPILE="1",
               NUMBA_DISABLE_JIT="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.strip().splitlines()[-1]) == 300.0


def _helpers_of(cache):
    """Pids of weft compile helpers working for cache folder ``cache`` (Linux /proc)."""
    pids = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"weft.runtime.ahead import compile_entry" not in f.read():
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"WEFT_CACHE_DIR={cache}".encode() in f.read().split(b"\0"):
                    pids.append(pid)
        except OSError:
            pass
    return pids


@pytest.mark.cold
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the helper through /proc")
def test_a_program_that_exits_leaves_its_helper_to_fill_the_cache(tmp_path):
    """A short program ends before the helper has compiled the threaded entries: the helper
    finishes its queue after the program, and the next run starts with the threaded code."""
    import time
    cache = tmp_path / "cache"
    res = _run(cache, finish=False)
    assert res["grad"] == pytest.approx((np.arange(300) / 100).tolist(), rel=1e-6)
    deadline = time.monotonic() + 600
    while _helpers_of(cache) and time.monotonic() < deadline:
        time.sleep(0.2)
    warm = _run(cache, finish=False)
    assert warm["early"] == [] and warm["threaded"] == [True, True] and not warm["helper"]


def test_whole_launch_is_the_threaded_entrys_chunk():
    """The first tier of a threaded entry that hands its chunk only its own parameters is that
    chunk over the whole launch (the same results as the threaded entry); an entry that adds
    into per-thread copies has none (it runs its serial twin, or is not tiered)."""
    import weft as wp
    from weft.runtime.background import WholeLaunch, whole_launch
    from weft.runtime.dispatch import prepare

    from .ahead_kernels import square, total
    x = wp.array(np.arange(300, dtype=np.float32) / 100)
    y, z = wp.zeros(300, dtype=float), wp.zeros(300, dtype=float)
    wp.launch(square, 300, inputs=[x, y])  # the threaded entry
    ck, _, values = prepare(square, (300,), [x, z], wp.get_device("cpu"))
    fn = ck.entry("forward", "cpu")
    assert fn in ck.called
    whole = whole_launch(ck, fn)
    assert isinstance(whole, WholeLaunch)
    assert whole.dispatcher is ck.module.square__fwd_chunk.dispatcher
    import numba
    before = numba.get_num_threads()
    numba.set_num_threads(min(3, numba.config.NUMBA_NUM_THREADS))  # blocks on Python threads
    try:
        whole((300,), *values)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(z.numpy(), y.numpy())
    np.testing.assert_array_equal(z.numpy(), (np.arange(300, dtype=np.float32) / 100) ** 2)
    tk = total.compiled("cpu")
    assert whole_launch(tk, tk.entry("forward", "cpu")) is None
    # (its adjoint adds into adj_y at each thread's own index: no per-thread copies)
    assert isinstance(whole_launch(tk, tk.entry("adjoint", "cpu")), WholeLaunch)
