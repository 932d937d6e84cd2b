"""Builtins called at Python scope keep their generated host code in weft's cache
(``weft.runtime.host``): a second process reads it instead of running the transpiler, with the
same values, and a damaged file is generated again."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.uncached  # each case brings its own cache

PROGRAM = textwrap.dedent("""
    import sys
    import weft as wp
    axis = wp.normalize(wp.vec3(1.0, 2.0, 2.0))
    q = wp.quat_from_axis_angle(axis, 0.5)
    m = wp.clamp(7, 0, 5)  # (int arguments: constants of the generated call)
    print("axis", list(axis))
    print("q", list(q))
    print("m", m)
    print("transpiler", "weft.transpiler.pipeline" in sys.modules)
""")


def run(tmp_path):
    script = tmp_path / "host_calls.py"
    script.write_text(PROGRAM)
    env = {k: v for k, v in os.environ.items() if k not in ("WEFT_CACHE_DIR", "WEFT_EXPECT_WARM")}
    env["WEFT_CACHE_DIR"] = str(tmp_path / "c")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in r.stdout.splitlines())
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    np.testing.assert_allclose(eval(lines["axis"]), axis, rtol=1e-6)
    np.testing.assert_allclose(eval(lines["q"]), list(np.sin(0.25) * axis) + [np.cos(0.25)],
                               rtol=1e-6)
    assert lines["m"] == "5"
    return lines, r.stderr


def test_second_process_reads_the_host_code(tmp_path):
    first, _ = run(tmp_path)
    files = sorted((tmp_path / "c" / "host").glob("*.bin"))
    assert first["transpiler"] == "True" and len(files) == 3
    second, _ = run(tmp_path)
    assert second == {**first, "transpiler": "False"}  # nothing transpiled, the same values
    files[0].write_bytes(files[0].read_bytes()[:50])
    third, err = run(tmp_path)
    assert "damaged compiled-code cache file" in err and third == first
    fourth, _ = run(tmp_path)
    assert fourth == second  # written again
