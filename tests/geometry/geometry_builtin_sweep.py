"""Sweep every differentiable geometry builtin against float64 central finite differences.

``CASES`` holds one small kernel per builtin (volumes, meshes): it applies the builtin to
per-thread inputs and stores EVERY output, the output arguments and struct members included
(``g`` of ``volume_sample_grad*``; ``t``, ``u``, ``v``, ``sign``, ``normal``, ``face`` of the
queries). For each differentiable input the sweep checks, at every point of one launch:

- reverse mode (``Tape.backward`` with random output weights) against ``J^T dy`` and
- forward mode (``wp.jvp`` along random directions) against ``J dx``,

where ``J`` comes from central differences of the kernel's outputs, taken in float64 over the
steps the float32 inputs really moved. Per-thread inputs (sample points, ray origins and
directions, barycentrics) are differentiated coordinate by coordinate (threads are independent,
so one pair of launches moves every point at once); the mesh's points and velocities (reached
through the mesh id) along a random direction of all vertices (the mesh refitted). Points lie
away from cell faces, rounding boundaries, triangle edges and ties, where the outputs are
smooth: integer outputs (``face``) and signs must not change under the steps (checked).
``NOT_DIFFERENTIABLE`` names the other geometry builtins and why they have no derivatives;
``tests/geometry/test_geometry_builtin_sweep.py`` checks that the two lists cover the
registry's geometry builtins (so a new one must be added here) and runs this file.

It runs as plain Python (``NUMBA_DISABLE_JIT=1``, set by the test): the generated code is the
same compiled or not, and a dozen compiled kernels would take minutes. Prints ``OK name`` or
``FAIL name: reason`` per case.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import traceback
from dataclasses import dataclass

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "nvdb")


@dataclass
class Case:
    """``body``: kernel statements on ``i = wp.tid()``, the id ``obj`` and the per-thread inputs
    ``ins`` (name, dtype text, sampler); ``outs`` (expression, dtype text) are stored; ``mesh``
    inputs are the mesh arrays differentiated through the id (``points``, ``velocities``)."""
    scene: str
    ins: list
    body: str
    outs: list
    h: float = 1e-3
    mesh: tuple = ()
    reaches: tuple = ()   # private builtins this case differentiates through
    data: tuple = ()      # (name, dtype text): a shared array of data (``index_data``), not
    # differentiated here (tests/geometry/test_volume_typed_kernels.py differentiates it)
    all_zero: str = ""    # why every derivative is zero (else one must be nonzero)


V3 = "wp.vec3"
MESH_OUTS_PT = [("q.u", "float"), ("q.v", "float"), ("q.sign", "sign"), ("q.face", "int")]


def _pt_case(form, extra=""):
    return Case("mesh", [("p", V3, "near_faces")],
                f"    q = wp.{form}(obj, p[i], 10.0{extra})", MESH_OUTS_PT, h=2e-3,
                mesh=("points",), reaches=("_value_grad_of",))


CASES = {
    # ---------------------------------------------------------------- volumes
    "volume_sample_f": Case("torus", [("uvw", V3, "torus_cells")],
                            "    s = wp.volume_sample_f(obj, uvw[i], wp.Volume.LINEAR)",
                            [("s", "float")], h=0.05),
    "volume_sample": Case("double", [("uvw", V3, "double_cells")],
                          "    s = wp.volume_sample(obj, uvw[i], wp.Volume.LINEAR, "
                          "dtype=wp.float64)", [("s", "wp.float64")], h=0.05,
                          reaches=("_volume_sample_d",)),
    "volume_sample_v": Case("vec", [("uvw", V3, "vec_cells")],
                            "    s = wp.volume_sample_v(obj, uvw[i], wp.Volume.LINEAR)",
                            [("s", V3)], h=0.05),
    "volume_sample_grad_f": Case("torus", [("uvw", V3, "torus_cells")],
                                 "    g = wp.vec3()\n"
                                 "    s = wp.volume_sample_grad_f(obj, uvw[i], wp.Volume.LINEAR, g)",
                                 [("s", "float"), ("g", V3)], h=0.05,
                                 reaches=("_volume_sample_grad_f4",)),
    "volume_sample_grad": Case("double", [("uvw", V3, "double_cells")],
                               "    g = wp.vec3d()\n"
                               "    s = wp.volume_sample_grad(obj, uvw[i], wp.Volume.LINEAR, g, "
                               "dtype=wp.float64)", [("s", "wp.float64"), ("g", "wp.vec3d")],
                               h=0.05, reaches=("_volume_sample_grad_d4",)),
    "volume_sample_index": Case("index", [("uvw", V3, "index_cells"), ("bg", "float", "bg1")],
                                "    s = wp.volume_sample_index(obj, uvw[i], wp.Volume.LINEAR, "
                                "vd, bg[i])", [("s", "float")], h=0.05, data=(("vd", "float"),)),
    "volume_sample_grad_index": Case(
        "index", [("uvw", V3, "index_cells"), ("bg", "wp.vec4d", "bg4")],
        "    g = M43D()\n"
        "    s = wp.volume_sample_grad_index(obj, uvw[i], wp.Volume.LINEAR, vd, bg[i], g)",
        [("s", "wp.vec4d"), ("g", "wp.types.matrix((4, 3), wp.float64)")], h=0.05,
        data=(("vd", "wp.vec4d"),)),
    "volume_world_to_index": Case("torus", [("x", V3, "world")],
                                  "    s = wp.volume_world_to_index(obj, x[i])", [("s", V3)],
                                  h=0.05),
    "volume_index_to_world": Case("torus", [("x", V3, "world")],
                                  "    s = wp.volume_index_to_world(obj, x[i])", [("s", V3)],
                                  h=0.05),
    "volume_world_to_index_dir": Case("torus", [("x", V3, "world")],
                                      "    s = wp.volume_world_to_index_dir(obj, x[i])",
                                      [("s", V3)], h=0.05),
    "volume_index_to_world_dir": Case("torus", [("x", V3, "world")],
                                      "    s = wp.volume_index_to_world_dir(obj, x[i])",
                                      [("s", V3)], h=0.05),
    # ---------------------------------------------------------------- meshes
    "mesh_query_point": Case("mesh", [("p", V3, "near_faces")],
                             "    sign = float(0.0)\n    face = int(0)\n    u = float(0.0)\n"
                             "    v = float(0.0)\n"
                             "    hit = wp.mesh_query_point(obj, p[i], 10.0, sign, face, u, v)",
                             [("u", "float"), ("v", "float"), ("sign", "sign"),
                              ("face", "int"), ("int(hit)", "int")], h=2e-3, mesh=("points",),
                             reaches=("_value_grad_of",)),
    "mesh_query_point_no_sign": Case("mesh", [("p", V3, "near_faces")],
                                     "    q = wp.mesh_query_point_no_sign(obj, p[i], 10.0)",
                                     [("q.u", "float"), ("q.v", "float"), ("q.face", "int")],
                                     h=2e-3, mesh=("points",)),
    "mesh_query_point_sign_normal": _pt_case("mesh_query_point_sign_normal"),
    "mesh_query_point_sign_winding_number": _pt_case("mesh_query_point_sign_winding_number"),
    "mesh_query_point_sign_parity": _pt_case("mesh_query_point_sign_parity"),
    "mesh_query_furthest_point_no_sign": Case(
        "mesh", [("p", V3, "near_faces")],
        "    q = wp.mesh_query_furthest_point_no_sign(obj, p[i], 0.0)",
        [("q.u", "float"), ("q.v", "float"), ("q.face", "int")], h=2e-3, mesh=("points",),
        all_zero="the furthest point of a triangle is a vertex: u, v are 0 or 1"),
    "mesh_query_ray": Case("mesh", [("o", V3, "ray_starts"), ("d", V3, "ray_dirs")],
                           "    t = float(0.0)\n    u = float(0.0)\n    v = float(0.0)\n"
                           "    sign = float(0.0)\n    n = wp.vec3()\n    face = int(0)\n"
                           "    hit = wp.mesh_query_ray(obj, o[i], d[i], 100.0, t, u, v, sign, "
                           "n, face)",
                           [("t", "float"), ("u", "float"), ("v", "float"), ("sign", "sign"),
                            ("n", V3), ("face", "int"), ("int(hit)", "int")], h=1e-3,
                           mesh=("points",), reaches=("_value_grad_of",)),
    "mesh_eval_position": Case("mesh", [("f", "int", "faces"), ("u", "float", "bary_u"),
                                        ("v", "float", "bary_v")],
                               "    s = wp.mesh_eval_position(obj, f[i], u[i], v[i])",
                               [("s", V3)], h=1e-2, mesh=("points",)),
    "mesh_eval_velocity": Case("mesh", [("f", "int", "faces"), ("u", "float", "bary_u"),
                                        ("v", "float", "bary_v")],
                               "    s = wp.mesh_eval_velocity(obj, f[i], u[i], v[i])",
                               [("s", V3)], h=1e-2, mesh=("velocities",)),
    "mesh_eval_face_normal": Case("mesh", [("f", "int", "faces")],
                                  "    s = wp.mesh_eval_face_normal(obj, f[i])", [("s", V3)],
                                  h=1e-3, mesh=("points",)),
    "mesh_get_point": Case("mesh", [("k", "int", "vertices")],
                           "    s = wp.mesh_get_point(obj, k[i])", [("s", V3)], h=1e-2,
                           mesh=("points",)),
    "mesh_get_velocity": Case("mesh", [("k", "int", "vertices")],
                              "    s = wp.mesh_get_velocity(obj, k[i])", [("s", V3)], h=1e-2,
                              mesh=("velocities",)),
}

NOT_DIFFERENTIABLE = {
    "volume_sample_i": "an int32 grid's value",
    "volume_lookup": "voxel values at integer coordinates",
    "volume_lookup_f": "voxel value at integer coordinates",
    "volume_lookup_i": "voxel value at integer coordinates",
    "volume_lookup_v": "voxel value at integer coordinates",
    "volume_lookup_index": "an index",
    "volume_voxel_count": "a count",
    "_volume_lookup_d": "voxel value at integer coordinates",
    "volume_store": "a write (no result)",
    "volume_store_f": "a write (no result)",
    "volume_store_i": "a write (no result)",
    "volume_store_v": "a write (no result)",
    "_volume_store_d": "a write (no result)",
    "hash_grid_query": "a query state (candidate indices)",
    "hash_grid_query_next": "an index and a flag",
    "hash_grid_point_id": "an index",
    "mesh_get_index": "a vertex index",
    "mesh_query_aabb": "a query state (face indices)",
    "mesh_query_sphere": "a query state (face indices)",
    "mesh_query_aabb_next": "a face index and a flag",
    "mesh_query_next": "a face index and a flag",
    "mesh_query_ray_anyhit": "a flag",
    "mesh_query_ray_count_intersections": "a count",
    "intersect_tri_tri": "a flag",
    "bvh_query_aabb": "a query state (item indices)",
    "bvh_query_ray": "a query state (item indices)",
    "bvh_query_sphere": "a query state (item indices)",
    "bvh_query_capsule": "a query state (item indices)",
    "bvh_query_next": "an item index and a flag",
    "bvh_get_group_root": "a node index",
    "mesh_get_group_root": "a node index",
}


# ------------------------------------------------------------------------------ scenes
def octahedron():
    """A closed convex mesh with irregular faces (no symmetric ties)."""
    pts = np.array([[1.1, 0.05, 0.0], [-0.9, 0.0, 0.1], [0.0, 1.2, -0.05], [0.1, -0.8, 0.0],
                    [0.0, 0.1, 1.0], [-0.05, 0.0, -1.3]], np.float32)
    tris = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4],
                     [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]], np.int32)
    return pts, tris


def scene(wp, name):
    if name == "torus":
        return wp.Volume.load_from_nvdb(os.path.join(DATA, "torus.nvdb"))
    if name == "vec":
        return wp.Volume.load_from_nvdb(os.path.join(DATA, "test_vec_grid.nvdb"))
    if name == "index":  # an index grid of 16^3 voxels
        return wp.Volume.allocate((0, 0, 0), (15, 15, 15), 1.0, bg_value=None)
    if name == "double":  # varies along all axes together (mixed derivatives nonzero)
        vol = wp.Volume.allocate((0, 0, 0), (15, 15, 15), 1.0, bg_value=np.float64(0.0))
        i, j, k = np.meshgrid(*[np.arange(16.0)] * 3, indexing="ij")
        vol._store_dense(3.0 * np.sin(0.7 * i) * np.cos(0.4 * j) * (k - 4.0))
        return vol
    pts, tris = octahedron()
    vel = np.random.default_rng(1).normal(size=pts.shape).astype(np.float32)
    return wp.Mesh(wp.array(pts, dtype=wp.vec3, requires_grad=True),
                   wp.array(tris.ravel(), dtype=wp.int32),
                   velocities=wp.array(vel, dtype=wp.vec3, requires_grad=True),
                   support_winding_number=True)


def _face_frames(n, rng):
    pts, tris = octahedron()
    f = rng.integers(0, len(tris), n)
    a, b, c = (pts[tris[f, k]].astype(np.float64) for k in range(3))
    u = rng.uniform(0.2, 0.6, n)
    v = rng.uniform(0.2, 0.8 - u)
    on = u[:, None] * a + v[:, None] * b + (1 - u - v)[:, None] * c
    nrm = np.cross(b - a, c - a)
    nrm /= np.linalg.norm(nrm, axis=1)[:, None]
    return on, nrm


def sample(kind, n, rng):
    def cells(lo, hi):
        return rng.integers(lo, hi, (n, 3)) + rng.uniform(0.2, 0.8, (n, 3))
    if kind == "torus_cells":
        return cells(-15, 14)
    if kind == "double_cells":
        return cells(0, 14)
    if kind == "vec_cells":
        return cells(-15, 14)
    if kind == "index_cells":  # the cells at -1 mix in the background
        return cells(-1, 15)
    if kind in ("bg1", "bg4"):
        return rng.uniform(-2, 2, (n, 4) if kind == "bg4" else n)
    if kind == "world":
        return rng.uniform(-3, 3, (n, 3))
    if kind == "near_faces":  # just above or below a face's interior
        on, nrm = _face_frames(n, rng)
        return on + nrm * (rng.uniform(0.03, 0.1, n) * rng.choice([-1, 1], n))[:, None]
    if kind in ("ray_starts", "ray_dirs"):  # from outside towards a face's interior
        r = np.random.default_rng(99)   # the same frames for both
        on, nrm = _face_frames(n, r)
        d = -nrm + 0.2 * r.uniform(-1, 1, (n, 3))
        return on - 0.7 * d if kind == "ray_starts" else d
    if kind == "faces":
        return rng.integers(0, 8, n)
    if kind == "vertices":
        return rng.integers(0, 6, n)
    if kind == "bary_u":
        return rng.uniform(0.1, 0.5, n)
    if kind == "bary_v":
        return rng.uniform(0.1, 0.4, n)
    raise ValueError(kind)


# ------------------------------------------------------------------------------ kernels
def kernel_source(name, case):
    params = ["obj: wp.uint64"] + [f"{p}: wp.array(dtype={t})" for p, t in case.data]
    params += [f"{p}: wp.array(dtype={t})" for p, t, _ in case.ins]
    params += [f"out{k}: wp.array(dtype={'float' if t == 'sign' else t})"
               for k, (_, t) in enumerate(case.outs)]
    stores = "".join(f"    out{k}[i] = {e}\n" for k, (e, _) in enumerate(case.outs))
    return (f"@wp.kernel\ndef k_{name}({', '.join(params)}):\n    i = wp.tid()\n"
            f"{case.body}\n{stores}")


def load_kernels(wp):
    folder = tempfile.mkdtemp(prefix="weft-geom-sweep-")
    path = os.path.join(folder, "geometry_sweep_kernels.py")
    with open(path, "w") as f:
        f.write("import weft as wp\n\nM43D = wp.types.matrix((4, 3), wp.float64)\n\n\n" +
                "\n\n".join(kernel_source(n, c) for n, c in CASES.items()))
    spec = importlib.util.spec_from_file_location("geometry_sweep_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------------------ checks
class Runner:
    def __init__(self, wp, kernel, case, obj, n=24, seed=0):
        self.wp, self.kernel, self.case, self.obj, self.n = wp, kernel, case, obj, n
        rng = np.random.default_rng(seed)
        self.ins = [np.asarray(sample(s, n, rng), np.int32 if t == "int" else np.float32)
                    for _, t, s in case.ins]
        self.dtypes = [self._dtype(t) for _, t, _ in case.ins]
        self.out_dtypes = [self._dtype(t) for _, t in case.outs]
        # outputs with derivatives; ``sign`` outputs (Warp's: +-1 for points, the ray-triangle
        # determinant for rays, of which only the sign means anything) carry none, as Warp's
        self.float_out = [t not in ("int", "sign") for _, t in case.outs]
        self.signs = [t == "sign" for _, t in case.outs]
        self.rng = rng
        self.data = []
        for _, t in case.data:  # one value per voxel of the grid
            d = self._dtype(t)
            shape = (obj.get_voxel_count(),) + ((4,) if d is wp.vec4d else ())
            self.data.append(wp.array(rng.uniform(-1, 1, shape), dtype=d))
        self.head = [obj.id] + self.data

    def _dtype(self, t):
        wp = self.wp
        return {"int": wp.int32, "float": wp.float32, "sign": wp.float32}.get(t) or \
            eval(t, {"wp": wp})  # noqa: S307

    def arrays(self, ins, grad=False):
        wp = self.wp
        a = [wp.array(x, dtype=d, requires_grad=grad and d is not wp.int32)
             for x, d in zip(ins, self.dtypes)]
        o = [wp.zeros(self.n, dtype=d, requires_grad=grad and f)
             for d, f in zip(self.out_dtypes, self.float_out)]
        return a, o

    def run(self, ins=None):
        a, o = self.arrays(self.ins if ins is None else ins)
        self.wp.launch(self.kernel, self.n, inputs=self.head + a + o)
        return [np.asarray(x.numpy(), np.float64).reshape(self.n, -1) for x in o]

    def fd(self, shift):
        """Central differences of every output along ``shift(sign)`` (which moves the inputs
        and returns the float64 size of the step taken per point)."""
        base = self.run()
        plus, step_p = shift(1.0)
        minus, step_m = shift(-1.0)
        for k, f in enumerate(self.float_out):
            if not f:
                for x in (plus, minus):  # faces, flags and signs must not change
                    if not np.array_equal(np.sign(x[k]) if self.signs[k] else x[k],
                                          np.sign(base[k]) if self.signs[k] else base[k]):
                        raise AssertionError(f"output {self.case.outs[k][0]} changed under the "
                                             "step: a point is at a boundary")
        return [(p - m) / (step_p - step_m)[:, None] for p, m in zip(plus, minus)]

    def check_point_inputs(self, close):
        """Per-thread inputs, coordinate by coordinate."""
        wp, h = self.wp, self.case.h
        for j, x in enumerate(self.ins):
            if self.dtypes[j] is wp.int32:
                continue
            comps = x.shape[1] if x.ndim == 2 else 1
            jac = []  # per component: list over outputs of (n, m)
            for c in range(comps):
                def shift(s, j=j, c=c):
                    ins = [y.copy() for y in self.ins]
                    col = ins[j][:, c] if comps > 1 else ins[j]
                    col += np.float32(s * h)
                    moved = (col.astype(np.float64) -
                             (x[:, c] if comps > 1 else x).astype(np.float64))
                    return self.run(ins), moved
                jac.append(self.fd(shift))
            dy = [self.rng.uniform(-1, 1, o.shape) for o in self.run()]
            # reverse
            a, o = self.arrays(self.ins, grad=True)
            tape = wp.Tape()
            with tape:
                wp.launch(self.kernel, self.n, inputs=self.head + a + o)
            tape.backward(grads={oo: d.reshape(oo.numpy().shape).astype(oo.numpy().dtype)
                                 for oo, d, f in zip(o, dy, self.float_out) if f})
            want = np.stack([sum(np.sum(jac[c][k] * dy[k], axis=1)
                                 for k, f in enumerate(self.float_out) if f)
                             for c in range(comps)], axis=1)
            close(np.asarray(a[j].grad.numpy(), np.float64).reshape(self.n, comps), want,
                  f"reverse, input {self.case.ins[j][0]}")
            # forward
            dx = self.rng.uniform(-1, 1, x.shape).astype(np.float32)
            a, o = self.arrays(self.ins)
            t = wp.jvp(self.kernel, self.n, inputs=self.head + a, outputs=o,
                       tangents={a[j]: dx})
            for k, f in enumerate(self.float_out):
                if self.signs[k]:
                    close(np.asarray(t[o[k]].numpy(), np.float64), 0.0 * self.run()[k].ravel(),
                          f"forward, input {self.case.ins[j][0]}, output {self.case.outs[k][0]}")
                if not f:
                    continue
                want = sum(jac[c][k] * (dx[:, c] if comps > 1 else dx)[:, None]
                           for c in range(comps))
                close(np.asarray(t[o[k]].numpy(), np.float64).reshape(self.n, -1), want,
                      f"forward, input {self.case.ins[j][0]}, output {self.case.outs[k][0]}")

    def check_mesh_inputs(self, close):
        """The mesh's points / velocities, along a random direction of all vertices."""
        wp, h = self.wp, self.case.h
        for which in self.case.mesh:
            arr = getattr(self.obj, which)
            base = arr.numpy().copy()
            d = self.rng.uniform(-1, 1, base.shape).astype(np.float32)

            def shift(s):
                moved = (base + np.float32(s * h) * d).astype(np.float32)
                arr.numpy()[...] = moved
                self.obj.refit()
                out = self.run()
                arr.numpy()[...] = base
                self.obj.refit()
                # the step along d, in float64 (the norm of the vertices' real move over |d|)
                step = np.sum((moved.astype(np.float64) - base) * d) / np.sum(d.astype(
                    np.float64) ** 2)
                return out, np.full(self.n, step)
            jac = self.fd(shift)
            dy = [self.rng.uniform(-1, 1, o.shape) for o in self.run()]
            a, o = self.arrays(self.ins, grad=True)
            arr.grad.zero_()
            tape = wp.Tape()
            with tape:
                wp.launch(self.kernel, self.n, inputs=self.head + a + o)
            tape.backward(grads={oo: d_.reshape(oo.numpy().shape).astype(oo.numpy().dtype)
                                 for oo, d_, f in zip(o, dy, self.float_out) if f})
            got = float(np.sum(np.asarray(arr.grad.numpy(), np.float64) * d))
            want = float(sum(np.sum(jac[k] * dy[k]) for k, f in enumerate(self.float_out)
                             if f))
            close(np.array([got]), np.array([want]), f"reverse, mesh {which}")
            a, o = self.arrays(self.ins)
            t = wp.jvp(self.kernel, self.n, inputs=self.head + a, outputs=o,
                       tangents={arr: d})
            for k, f in enumerate(self.float_out):
                if f:
                    close(np.asarray(t[o[k]].numpy(), np.float64).reshape(self.n, -1), jac[k],
                          f"forward, mesh {which}, output {self.case.outs[k][0]}")


def main():
    sys.path.insert(0, ROOT)
    import weft as wp
    mods = load_kernels(wp)
    scenes = {}
    for name, case in CASES.items():
        try:
            if case.scene not in scenes:
                scenes[case.scene] = scene(wp, case.scene)
            r = Runner(wp, getattr(mods, f"k_{name}"), case, scenes[case.scene])
            nonzero = []

            def close(got, want, what):
                scale = float(np.max(np.abs(want))) if np.size(want) else 0.0
                nonzero.append(scale)
                np.testing.assert_allclose(got, want, rtol=0, atol=2e-3 * scale + 1e-6,
                                           err_msg=f"{name}: {what}")
            with np.errstate(all="ignore"):
                r.check_point_inputs(close)
                r.check_mesh_inputs(close)
            if not case.all_zero and not any(s > 1e-3 for s in nonzero):
                raise AssertionError("every derivative is zero: the check is vacuous")
        except Exception as e:  # noqa: BLE001 - reported, and the test fails on it
            print(f"FAIL {name}: {type(e).__name__}: {' '.join(str(e).split())[:800]}")
            if os.environ.get("WEFT_SWEEP_TRACEBACK"):
                traceback.print_exc()
            continue
        print(f"OK {name}")


if __name__ == "__main__":
    main()
