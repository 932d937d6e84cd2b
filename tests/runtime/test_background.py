"""A launch recorded on a tape has its CPU adjoint compiled meanwhile by a helper process
(weft.runtime.background): backward loads it from the cache instead of compiling it here, the
loss and gradient are the same, and with a warm cache (or the helper switched off) no helper
runs. An adjoint the helper has not begun when backward needs it is taken back and compiled
here."""
import pickle
import struct

import pytest

from .ahead_kernels import check_values, run_program


def _compiled_here(res):
    return sorted(c.rsplit(".", 1)[1] for c in res["ahead"] + res["late"])


@pytest.mark.cold
def test_adjoints_compiled_by_the_helper(tmp_path):
    # (backward waits until the helper is done: otherwise an adjoint it has not begun yet
    # would be compiled here, test_adjoint_not_begun_is_compiled_here)
    res = run_program(tmp_path / "cache", settle="assert background.finish(600)")
    check_values(res)
    assert res["helper"]
    # this process compiled the forwards; the helper the adjoints, loaded here from the cache
    assert _compiled_here(res) == ["square__fwd", "total__fwd"]
    warm = run_program(tmp_path / "cache")  # a new process with a warm cache
    check_values(warm)
    assert not warm["helper"] and _compiled_here(warm) == []


@pytest.mark.cold
def test_helper_switched_off(tmp_path):
    res = run_program(tmp_path / "cache", WEFT_BACKGROUND_COMPILE="0")
    check_values(res)
    assert not res["helper"]
    assert _compiled_here(res) == ["square__adj", "square__fwd", "total__adj", "total__fwd"]


#: a helper that records what it is sent and never compiles anything
SILENT = r'''
import os, sys
with open({log!r}, "ab") as f:
    while True:
        part = os.read(0, 1 << 16)
        if not part:
            break
        f.write(part)
        f.flush()
'''


@pytest.mark.cold
def test_adjoint_not_begun_is_compiled_here(tmp_path):
    """The helper never begins the adjoints asked of it: backward takes each request back
    (the helper is told to drop it) and compiles the adjoint here, with the same results."""
    log = tmp_path / "sent.bin"
    res = run_program(tmp_path / "cache",
                      load=f"background.HELPER = {SILENT.format(log=str(log))!r}")
    check_values(res)
    assert res["helper"]
    assert _compiled_here(res) == ["square__adj", "square__fwd", "total__adj", "total__fwd"]
    sent = _frames(log.read_bytes())
    asked = [(m[1][1], m[2]) for m in sent if m[0] == "compile"]
    assert sorted(asked) == [("square__adj", True), ("total__adj", True)]
    # backward takes them back in its order: the last launch's adjoint first
    assert [m[1][1] for m in sent if m[0] == "cancel"] == ["total__adj", "square__adj"]
    for m in sent:
        assert m[0] in ("compile", "cancel") and m[1][0].startswith("weft_generated.")
    # what this process compiled is in the cache: a new process compiles nothing, same numbers
    warm = run_program(tmp_path / "cache")
    assert not warm["helper"] and _compiled_here(warm) == []
    assert warm["s"] == res["s"] and warm["grad"] == res["grad"]


def test_helper_order_and_cancel(tmp_path):
    """The helper compiles the newest urgent request first, then the others in the order sent,
    and drops a cancelled one (entries not in the cache: each fails at once, and is answered)."""
    import os
    import subprocess
    import sys

    from weft.runtime import background

    from .ahead_kernels import ROOT

    def frame(message):
        data = pickle.dumps(message)
        return struct.pack("<I", len(data)) + data

    key = lambda name: ("weft_generated.absent_module", name)  # noqa: E731
    sent = [frame(("compile", key("a"), True, ())), frame(("compile", key("b"), False, ())),
            frame(("compile", key("c"), True, ())), frame(("compile", key("d"), False, ())),
            frame(("compile", key("e"), True, ())), frame(("cancel", key("a")))]
    env = dict(os.environ, WEFT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    (tmp_path / "cache").mkdir(mode=0o700)
    out = subprocess.run([sys.executable, "-c", background.HELPER], input=b"".join(sent),
                         capture_output=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr.decode()
    said = _frames(out.stdout)
    assert [m[1][1] for m in said if m[0] == "start"] == ["e", "c", "b", "d"]
    assert [(m[0], m[1][1], m[2]) for m in said if m[0] == "done"] == \
        [("done", n, False) for n in "ecbd"]


def _frames(data):
    out = []
    while data:
        n = struct.unpack("<I", data[:4])[0]
        out.append(pickle.loads(data[4:4 + n]))
        data = data[4 + n:]
    return out
