"""weft's shipped machine code (``weft.native.shipped``): the store is current, a new machine
compiles none of weft's own functions, and a damaged, foreign or stale store is ignored."""
import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from weft.core.diskcache import CacheWarning, _seal, _unseal
from weft.native import shipped

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _stores():
    try:
        names = os.listdir(shipped.FOLDER)
    except OSError:
        names = []
    out = []
    for name in sorted(n for n in names if n.endswith(".index")):
        with open(os.path.join(shipped.FOLDER, name), "rb") as f:
            out.append(pickle.loads(_unseal(f.read(), name))[0])
    return out


def test_the_shipped_store_is_current_for_this_platform():
    """Fails after a change under weft/native until ``python -m weft.native build`` runs (the
    store would be ignored: every new machine would compile weft's cores again)."""
    facts = shipped.host_facts()
    metas = [m for m in _stores() if m["triple"] == facts["triple"]]
    if not metas:
        pytest.skip(f"weft ships no machine code for {facts['triple']}")
    assert len(metas) == 1
    assert shipped.why_unusable(metas[0], facts) is None
    assert len(shipped.STORE) > 100, shipped.STORE.reason


FIRST_USE = textwrap.dedent(r"""
    import json, os, sys
    import numpy as np
    from numba.core import event
    import weft as wp

    native = os.path.join(os.path.dirname(wp.__file__), "native") + os.sep
    # weft's own funcs written in the kernel language (runtime.cache: library modules)
    library = os.path.join(os.environ["WEFT_CACHE_DIR"], "library") + os.sep
    compiled = []

    class Listener(event.Listener):
        def on_start(self, ev):
            fn = getattr(ev.data["dispatcher"], "py_func", None)
            path = os.path.abspath(fn.__code__.co_filename) if fn is not None else ""
            if path.startswith((native, library)):
                compiled.append(fn.__qualname__)

        def on_end(self, ev):
            pass

    @wp.kernel
    def closest(mesh: wp.uint64, pts: wp.array(dtype=wp.vec3), out: wp.array(dtype=float)):
        i = wp.tid()
        q = wp.mesh_query_point_no_sign(mesh, pts[i], 10.0)
        if q.result:
            out[i] = wp.length(wp.mesh_eval_position(mesh, q.face, q.u, q.v) - pts[i])

    @wp.kernel
    def neighbours(grid: wp.uint64, pts: wp.array(dtype=wp.vec3), r: float,
                   out: wp.array(dtype=int)):
        i = wp.tid()
        n = int(0)
        for j in wp.hash_grid_query(grid, pts[i], r):
            if wp.length(pts[j] - pts[i]) <= r:
                n += 1
        out[i] = n

    @wp.kernel
    def turn(q: wp.array(dtype=wp.quat), pts: wp.array(dtype=wp.vec3),
             out: wp.array(dtype=wp.vec3)):
        i = wp.tid()
        out[i] = wp.quat_rotate(q[0], pts[i])

    with event.install_listener("numba:compile", Listener()):
        # the unit cube, 12 triangles
        v = np.array([[x, y, z] for x in (0, 1) for y in (0, 1) for z in (0, 1)], np.float32)
        f = np.array([0, 1, 3, 0, 3, 2, 4, 6, 7, 4, 7, 5, 0, 4, 5, 0, 5, 1, 2, 3, 7, 2, 7, 6,
                      0, 2, 6, 0, 6, 4, 1, 5, 7, 1, 7, 3])
        mesh = wp.Mesh(points=wp.array(v, dtype=wp.vec3), indices=wp.array(f, dtype=int))
        pts = np.array(json.loads(sys.argv[1]), np.float32)
        d = wp.zeros(len(pts), dtype=float)
        wp.launch(closest, len(pts), [mesh.id, wp.array(pts, dtype=wp.vec3), d])
        mesh.points = wp.array(v * 2.0, dtype=wp.vec3)
        mesh.refit()
        d2 = wp.zeros(len(pts), dtype=float)
        wp.launch(closest, len(pts), [mesh.id, wp.array(pts, dtype=wp.vec3), d2])
        grid = wp.HashGrid(8, 8, 8)
        cloud = wp.array(pts, dtype=wp.vec3)
        grid.build(cloud, 0.6)
        n = wp.zeros(len(pts), dtype=int)
        wp.launch(neighbours, len(pts), [grid.id, cloud, 0.6, n])
        turned = wp.zeros(len(pts), dtype=wp.vec3)
        wp.launch(turn, len(pts), [wp.array([[0.0, 0.6, 0.0, 0.8]], dtype=wp.quat), cloud,
                                   turned])
    print("RESULT " + json.dumps({"compiled": compiled, "d": d.numpy().tolist(),
                                  "d2": d2.numpy().tolist(), "n": n.numpy().tolist(),
                                  "turned": turned.numpy().tolist()}))
""")


def test_a_new_machine_compiles_none_of_wefts_own_code(tmp_path):
    """Empty caches (a new machine after ``pip install``): building a mesh, refitting it,
    querying it, building and querying a hash grid, rotating by a quaternion (``quat_rotate``,
    a func weft declares in the kernel language) compile only the user's kernels; the shipped
    code gives the right answers."""
    if not len(shipped.STORE):
        pytest.skip(f"no shipped machine code here: {shipped.STORE.reason}")
    script = tmp_path / "first_use.py"
    script.write_text(FIRST_USE)
    rng = np.random.default_rng(3)
    pts = rng.uniform(-1.0, 2.0, (40, 3)).astype(np.float32)
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    env = dict(os.environ, WEFT_CACHE_DIR=str(cache), NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               WEFT_TIERED_COMPILE="0")
    env.pop("WEFT_EXPECT_WARM", None)
    r = subprocess.run([sys.executable, str(script), json.dumps(pts.tolist())], env=env,
                       capture_output=True, text=True, timeout=900)
    line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, r.stderr[-3000:]
    out = json.loads(line[0][7:])
    assert out["compiled"] == []
    # distances to the cube [0, 1]^3, then to [0, 2]^3 (its surface, from inside or outside)
    for scale, got in ((1.0, out["d"]), (2.0, out["d2"])):
        lo, hi = 0.0, scale
        outside = np.linalg.norm(np.maximum(np.maximum(lo - pts, pts - hi), 0.0), axis=1)
        inside = np.min(np.minimum(pts - lo, hi - pts), axis=1)
        inner = np.all((pts > lo) & (pts < hi), axis=1)
        np.testing.assert_allclose(got, np.where(inner, inside, outside), rtol=1e-5, atol=1e-6)
    dist = np.linalg.norm(pts[:, None, :] - pts[None, :, :], axis=2)
    np.testing.assert_array_equal(out["n"], (dist <= np.float32(0.6)).sum(axis=1))
    # q = (0, 0.6, 0, 0.8): the rotation about y by 2 atan2(0.6, 0.8)
    c, s = 0.8 * 0.8 - 0.6 * 0.6, 2 * 0.6 * 0.8
    rot = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    np.testing.assert_allclose(out["turned"], pts.astype(np.float64) @ rot.T, rtol=1e-5,
                               atol=1e-5)


def _store_with(tmp_path, entries):
    folder = tmp_path / "mc"
    shipped.write_store(entries, shipped.BASELINE, str(folder))
    return folder


def test_a_store_loads_what_was_written(tmp_path):
    folder = _store_with(tmp_path, {"a": b"payload a", "b": b"\x00" * 1000})
    store = shipped.Store(str(folder))
    if store.load("a") is None:
        pytest.skip(f"this host cannot use a {shipped.BASELINE} store: {store.reason}")
    assert store.load("a") == b"payload a"
    assert store.load("b") == b"\x00" * 1000
    assert store.load("c") is None


def test_a_damaged_foreign_or_stale_store_is_ignored(tmp_path):
    folder = _store_with(tmp_path, {"a": b"payload a"})
    index = next(p for p in folder.iterdir() if p.suffix == ".index")
    blob = index.read_bytes()
    meta, entries = pickle.loads(_unseal(blob, str(index)))
    if shipped.why_unusable(meta) is not None:
        pytest.skip(shipped.why_unusable(meta))

    # a garbled payload: its hash does not match, nothing is handed to Numba
    binfile = next(p for p in folder.iterdir() if p.suffix == ".bin")
    data = bytearray(binfile.read_bytes())
    data[len(data) // 2] ^= 0xFF
    binfile.write_bytes(bytes(data))
    assert shipped.Store(str(folder)).load("a") is None

    # a garbled index (weft warns, as for a damaged cache file)
    index.write_bytes(blob[:-3] + b"xyz")
    store = shipped.Store(str(folder))
    with pytest.warns(CacheWarning, match="damaged"):
        assert store.load("a") is None
    assert "damaged" in store.reason

    # another Numba, another CPU, changed sources
    for change, words in (({"numba": "0.1"}, "numba"), ({"cpu": "x86-64-v9"}, "lacks"),
                          ({"fingerprint": "0" * 64}, "changed")):
        index.write_bytes(_seal(pickle.dumps((dict(meta, **change), entries))))
        store = shipped.Store(str(folder))
        assert store.load("a") is None
        assert words in store.reason, store.reason


def test_keys_follow_the_code_and_the_options():
    from weft.core.diskcache import shipped_key

    def f(x):
        return x + 1

    def g(x):
        return x + 2

    a = shipped_key("m.py", f, {"nogil": True}, ("float32",))
    assert a == shipped_key("m.py", f, {"nogil": True}, ("float32",))
    assert a != shipped_key("m.py", f, {"nogil": False}, ("float32",))
    assert a != shipped_key("m.py", f, {"nogil": True}, ("float64",))
    g.__qualname__ = f.__qualname__
    assert a != shipped_key("m.py", g, {"nogil": True}, ("float32",))  # a constant differs
