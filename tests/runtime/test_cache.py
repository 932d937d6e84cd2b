"""The module cache key covers every value a kernel names: kernels differing only in a
captured builtin, tuple constant or type get different modules (a shared key would silently run
the wrong code)."""
import numpy as np

import weft as wp
from weft.runtime.cache import key_of


def _closing_over(fn):
    @wp.kernel
    def apply(x: wp.array(dtype=wp.float64), y: wp.array(dtype=wp.float64)):
        i = wp.tid()
        y[i] = fn(x[i])
    return apply


def test_kernels_closing_over_different_builtins_compute_each_builtin():
    x = np.array([0.3, 1.1])
    for fn, ref in ((wp.sin, np.sin), (wp.cos, np.cos), (wp.exp, np.exp)):
        k = _closing_over(fn)
        y = wp.zeros(2, dtype=wp.float64)
        wp.launch(k, 2, inputs=[wp.array(x, dtype=wp.float64)], outputs=[y])
        np.testing.assert_allclose(y.numpy(), ref(x), rtol=1e-15)


def _closing_over_value(c):
    @wp.kernel
    def use(y: wp.array(dtype=float)):
        y[0] = float(c[0]) + float(c[1])
    return use


def test_keys_differ_for_captured_tuples_and_types():
    assert key_of(_closing_over_value((1, 2))) != key_of(_closing_over_value((1, 3)))
    assert key_of(_closing_over(wp.sin)) == key_of(_closing_over(wp.sin))  # deterministic
    m1 = wp.types.matrix((12, 3), wp.float32)
    m2 = wp.types.matrix((1, 23), wp.float32)
    assert m1.__name__ == m2.__name__  # the names collide; the keys must not
    assert key_of(_closing_over_value(m1)) != key_of(_closing_over_value(m2))


def test_the_code_hash_covers_every_generator_and_linked_core(monkeypatch):
    # kernels embed the lowering's output and the geometry cores' machine code: a change to
    # any of them must change every cache key (a stale kernel would silently keep old code)
    import builtins

    from weft.runtime import cache
    read = []
    real_open = builtins.open

    def spy(path, *a, **k):
        read.append(str(path))
        return real_open(path, *a, **k)
    monkeypatch.setattr(cache, "_CODE_HASH", [])
    monkeypatch.setattr(builtins, "open", spy)
    cache._weft_code_hash()
    for part in ("transpiler/lowering/stmts.py", "transpiler/generate.py", "stdlib/mesh.py",
                 "stdlib/tiles/elements.py", "geometry/mesh_query.py", "geometry/kernel_api.py"):
        assert any(p.replace("\\", "/").endswith(part) for p in read), part


_MOVED = '''import weft as wp


@wp.kernel
def poke(a: wp.array(dtype=float)):
    a[5] = 1.0
'''


def _load(path, name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _constant_index_error_line(kernel):
    import re

    import pytest
    with pytest.raises(wp.LaunchError) as err:
        wp.launch(kernel, 1, inputs=[wp.zeros(3, dtype=float)])
    return int(re.search(r"\(line (\d+)\)", str(err.value)).group(1))


def test_a_kernel_moved_in_its_file_reports_its_new_lines(tmp_path):
    # same text, three lines further down: a cached module keyed without the position would
    # keep the old line numbers in its messages and in its generated source's comments
    path = tmp_path / "moved_kernel.py"
    path.write_text(_MOVED)
    first = _load(path, "moved_kernel_v1")
    assert _constant_index_error_line(first.poke) == 6
    path.write_text("# one\n# two\n# three\n" + _MOVED)
    import linecache
    linecache.checkcache(str(path))
    second = _load(path, "moved_kernel_v2")
    assert key_of(second.poke) != key_of(first.poke)
    assert _constant_index_error_line(second.poke) == 9
    # and an unmoved copy of the same text keeps the key (the position is all that differs)
    path.write_text(_MOVED)
    linecache.checkcache(str(path))
    assert key_of(_load(path, "moved_kernel_v3").poke) == key_of(first.poke)
