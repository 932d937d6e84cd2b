"""``import weft`` imports NumPy and Numba with the cycle collector paused and freezes what they
built (``weft.core.startup``): the collector is on afterwards, cyclic garbage made later is still
collected, and ``WEFT_GC_FREEZE=0``, a collector the program disabled, or a Numba imported
before weft leave the collector as it was."""
import os
import subprocess
import sys

PROGRAM = r'''
import gc, sys
pre = sys.argv[1]
if pre == "numba":
    import numba
elif pre == "disabled":
    gc.disable()
import weft
print("enabled", gc.isenabled())
print("frozen", gc.get_freeze_count())
print("flag", weft.core.startup.frozen_at_import)
if gc.isenabled():
    class Node:
        def __init__(self):
            self.me = self
    import weakref
    n = Node(); w = weakref.ref(n); del n
    gc.collect()
    print("collected", w() is None)
'''


def _run(pre, **env):
    r = subprocess.run([sys.executable, "-c", PROGRAM, pre], capture_output=True, text=True,
                       env={**os.environ, **env}, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return dict(line.split(" ", 1) for line in r.stdout.splitlines())


def test_import_freezes_numba_objects_and_keeps_collecting():
    out = _run("none")
    assert out["enabled"] == "True" and out["flag"] == "True"
    assert int(out["frozen"]) > 10000          # Numba's types, templates and registries
    assert out["collected"] == "True"           # a cycle made afterwards is still reclaimed


def test_freeze_can_be_turned_off():
    out = _run("none", WEFT_GC_FREEZE="0")
    assert out == {"enabled": "True", "frozen": "0", "flag": "False", "collected": "True"}


def test_nothing_done_when_numba_came_first_or_the_collector_is_off():
    assert _run("numba") == {"enabled": "True", "frozen": "0", "flag": "False",
                             "collected": "True"}
    assert _run("disabled") == {"enabled": "False", "frozen": "0", "flag": "False"}


LIGHT = r'''
import sys
import weft
from numba.core import config
print("scipy", "scipy" in sys.modules, "yaml", "yaml.reader" in sys.modules,
      "have_yaml", config._HAVE_YAML, "debuginfo", config.DEBUGINFO_DEFAULT)
import scipy, yaml
print("later", scipy.__version__.count(".") >= 1, yaml.safe_load("a: 1") == {"a": 1},
      config.yaml is sys.modules["yaml"])
'''


def test_numba_imported_without_scipy_and_with_yaml_on_use(tmp_path):
    """``import weft`` imports Numba without SciPy (its version check only) and with PyYAML
    executed at its first use (``startup._numba_import_light``); both import as usual later,
    and a ``.numba_config.yaml`` in the working directory is read as Numba reads it."""
    import pytest
    pytest.importorskip("scipy")
    pytest.importorskip("yaml")
    script = tmp_path / "light.py"
    script.write_text(LIGHT)

    def run(cwd):
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_DEBUGINFO"}
        r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           cwd=cwd, env=env, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stdout.split("\n")[:2]

    plain = tmp_path / "plain"
    plain.mkdir()
    assert run(plain) == ["scipy False yaml False have_yaml True debuginfo 0",
                          "later True True True"]
    configured = tmp_path / "configured"
    configured.mkdir()
    (configured / ".numba_config.yaml").write_text("debuginfo: 1\n")
    assert run(configured) == ["scipy False yaml True have_yaml True debuginfo 1",
                               "later True True True"]
