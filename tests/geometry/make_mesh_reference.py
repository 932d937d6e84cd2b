"""Regenerate ``mesh_reference.py``: the cases of ``mesh_drivers`` run through NVIDIA Warp
1.19 on the CPU, stored as SHA-256 digests of the canonical result arrays (plus the first rows
of each, for diagnostics), and the digests of Warp's BVH trees.

    PYTHONPATH=. /work/venv-warp/bin/python tests/geometry/make_mesh_reference.py

(The tests never import Warp; this script is the only place that does.)
"""
import ctypes
import os
import pprint

import numpy as np
import warp as wp

from tests.geometry import mesh_drivers as D
from tests.geometry import mesh_scenes as S

wp.config.quiet = True
wp.init()
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mesh_reference.py")


@wp.kernel
def k_points(mid: wp.uint64, q: wp.array(dtype=wp.vec3), kind: int, eps: float,
             face: wp.array(dtype=int), uvs: wp.array2d(dtype=float)):
    i = wp.tid()
    r = wp.mesh_query_point_no_sign(mid, q[i], 1.0e6)
    if kind == 0:
        r = wp.mesh_query_point(mid, q[i], 1.0e6)
    elif kind == 1:
        r = wp.mesh_query_point_no_sign(mid, q[i], 0.3)
    elif kind == 2:
        r = wp.mesh_query_point_sign_normal(mid, q[i], 1.0e6, eps)
    elif kind == 3:
        r = wp.mesh_query_point_sign_winding_number(mid, q[i], 1.0e6, 2.0, 0.5)
    elif kind == 4:
        r = wp.mesh_query_point_sign_parity(mid, q[i], 1.0e6, 3, 0.1)
    elif kind == 5:
        r = wp.mesh_query_furthest_point_no_sign(mid, q[i], 0.5)
    face[i] = -1
    if r.result:
        face[i] = r.face
        uvs[i, 0] = r.u
        uvs[i, 1] = r.v
        uvs[i, 2] = r.sign


@wp.kernel
def k_rays(mid: wp.uint64, o: wp.array(dtype=wp.vec3), d: wp.array(dtype=wp.vec3), mt: float,
           face: wp.array(dtype=int), vals: wp.array2d(dtype=float), hit: wp.array(dtype=int),
           count: wp.array(dtype=int)):
    i = wp.tid()
    r = wp.mesh_query_ray(mid, o[i], d[i], mt)
    face[i] = -1
    if r.result:
        face[i] = r.face
        vals[i, 0] = r.t
        vals[i, 1] = r.u
        vals[i, 2] = r.v
        vals[i, 3] = r.sign
        vals[i, 4] = r.normal[0]
        vals[i, 5] = r.normal[1]
        vals[i, 6] = r.normal[2]
    hit[i] = wp.where(wp.mesh_query_ray_anyhit(mid, o[i], d[i], 1.5), 1, 0)
    count[i] = wp.mesh_query_ray_count_intersections(mid, o[i], d[i])


@wp.kernel
def k_mesh_iter(mid: wp.uint64, q: wp.array(dtype=wp.vec3), sphere: int, h: float, r: float,
                count: wp.array(dtype=int), items: wp.array2d(dtype=int)):
    i = wp.tid()
    c = int(0)
    f = int(0)
    if sphere == 0:
        query = wp.mesh_query_aabb(mid, q[i] - wp.vec3(h), q[i] + wp.vec3(h))
        while wp.mesh_query_next(query, f):
            if c < items.shape[1]:
                items[i, c] = f
            c += 1
    else:
        query2 = wp.mesh_query_sphere(mid, q[i], r)
        while wp.mesh_query_next(query2, f):
            if c < items.shape[1]:
                items[i, c] = f
            c += 1
    count[i] = c


@wp.kernel
def k_eval(mid: wp.uint64, q: wp.array(dtype=wp.vec3), pos: wp.array2d(dtype=float)):
    i = wp.tid()
    r = wp.mesh_query_point_no_sign(mid, q[i], 1.0e6)
    x = wp.mesh_eval_position(mid, r.face, r.u, r.v)
    n = wp.mesh_eval_face_normal(mid, r.face)
    for k in range(3):
        pos[i, k] = x[k]
        pos[i, 3 + k] = n[k]


@wp.kernel
def k_get(mid: wp.uint64, pts: wp.array2d(dtype=float), idx: wp.array(dtype=int)):
    i = wp.tid()
    x = wp.mesh_get_point(mid, i)
    for k in range(3):
        pts[i, k] = x[k]
    idx[i] = wp.mesh_get_index(mid, i)


@wp.kernel
def k_bvh(bid: wp.uint64, q: wp.array(dtype=wp.vec3), o: wp.array(dtype=wp.vec3),
          d: wp.array(dtype=wp.vec3), kind: int, h: float, r: float,
          count: wp.array(dtype=int), items: wp.array2d(dtype=int)):
    i = wp.tid()
    c = int(0)
    f = int(0)
    if kind == 0:
        qa = wp.bvh_query_aabb(bid, q[i] - wp.vec3(h), q[i] + wp.vec3(h))
        while wp.bvh_query_next(qa, f):
            if c < items.shape[1]:
                items[i, c] = f
            c += 1
    elif kind == 1 or kind == 2:
        qr = wp.bvh_query_ray(bid, o[i], d[i])
        md = float(1.0e30)
        if kind == 2:
            md = 1.0
        while wp.bvh_query_next(qr, f, md):
            if c < items.shape[1]:
                items[i, c] = f
            c += 1
    elif kind == 3:
        qs = wp.bvh_query_sphere(bid, q[i], r)
        while wp.bvh_query_next(qs, f):
            if c < items.shape[1]:
                items[i, c] = f
            c += 1
    else:
        qc = wp.bvh_query_capsule(bid, o[i], d[i] * 0.5, 0.1)
        while wp.bvh_query_next(qc, f, 1.0):
            if c < items.shape[1]:
                items[i, c] = f
            c += 1
    count[i] = c


def v3(a):
    return wp.array(a, dtype=wp.vec3)


_meshes = {}


def warp_mesh(scene):
    if scene not in _meshes:
        pts, idx, wn = D.MESHES[scene]()
        _meshes[scene] = (wp.Mesh(v3(pts), wp.array(idx, dtype=wp.int32),
                                  support_winding_number=wn), pts, idx)
    return _meshes[scene]


@wp.kernel
def k_tri_tri(t: wp.array2d(dtype=float), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.intersect_tri_tri(wp.vec3(t[i, 0], t[i, 1], t[i, 2]),
                                  wp.vec3(t[i, 3], t[i, 4], t[i, 5]),
                                  wp.vec3(t[i, 6], t[i, 7], t[i, 8]),
                                  wp.vec3(t[i, 9], t[i, 10], t[i, 11]),
                                  wp.vec3(t[i, 12], t[i, 13], t[i, 14]),
                                  wp.vec3(t[i, 15], t[i, 16], t[i, 17]))


@wp.kernel
def k_tri_tri_d(t: wp.array2d(dtype=wp.float64), out: wp.array(dtype=int)):
    i = wp.tid()
    out[i] = wp.intersect_tri_tri(wp.vec3d(t[i, 0], t[i, 1], t[i, 2]),
                                  wp.vec3d(t[i, 3], t[i, 4], t[i, 5]),
                                  wp.vec3d(t[i, 6], t[i, 7], t[i, 8]),
                                  wp.vec3d(t[i, 9], t[i, 10], t[i, 11]),
                                  wp.vec3d(t[i, 12], t[i, 13], t[i, 14]),
                                  wp.vec3d(t[i, 15], t[i, 16], t[i, 17]))


@wp.kernel
def k_edge_edge(e: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    r = wp.closest_point_edge_edge(wp.vec3(e[i, 0], e[i, 1], e[i, 2]),
                                   wp.vec3(e[i, 3], e[i, 4], e[i, 5]),
                                   wp.vec3(e[i, 6], e[i, 7], e[i, 8]),
                                   wp.vec3(e[i, 9], e[i, 10], e[i, 11]), 1.0e-6)
    for k in range(3):
        out[i, k] = r[k]


def run_pairs(kind):
    if kind == "edge_edge":
        e = S.edge_pairs()
        out = wp.zeros((len(e), 3), dtype=float)
        wp.launch(k_edge_edge, len(e), inputs=[wp.array(e, dtype=float), out])
        return {"st_dist": out.numpy()}
    t = S.triangle_pairs()
    out = wp.zeros(len(t), dtype=int)
    if kind == "tri_tri_d":
        wp.launch(k_tri_tri_d, len(t), inputs=[wp.array(t.astype(np.float64),
                                                        dtype=wp.float64), out])
    else:
        wp.launch(k_tri_tri, len(t), inputs=[wp.array(t, dtype=float), out])
    return {"hit": out.numpy().astype(np.int32)}


def run_case(name):
    if name.startswith("pairs_"):
        return run_pairs(name[6:])
    if name.startswith("bvh_"):
        kind, leaf = name[4:].rsplit("_", 1)
        lo, up = S.boxes()
        b = wp.Bvh(v3(lo), v3(up), leaf_size=int(leaf))
        q = S.points(200, seed=7, lo=-1.2, hi=1.2)
        o, d = S.rays(200, seed=8)
        count = wp.zeros(200, dtype=int)
        items = wp.full((200, 160), -1, dtype=int)
        k = {"aabb": 0, "ray": 1, "ray_md": 2, "sphere": 3, "capsule": 4}[kind]
        wp.launch(k_bvh, 200, inputs=[b.id, v3(q), v3(o), v3(d), k, float(D.HALF),
                                      float(D.RADIUS), count, items])
        return {"count": count.numpy().astype(np.int32), "items": items.numpy().astype(np.int32)}
    kind, scene = name.rsplit("_", 1)
    m, pts, idx = warp_mesh(scene)
    if kind in ("point", "point_md", "sign_normal", "winding", "parity", "furthest"):
        q = D.QUERY_POINTS[scene]()
        face = wp.zeros(len(q), dtype=int)
        uvs = wp.zeros((len(q), 3), dtype=float)
        k = ("point", "point_md", "sign_normal", "winding", "parity", "furthest").index(kind)
        wp.launch(k_points, len(q), inputs=[m.id, v3(q), k, 1e-3, face, uvs])
        return {"face": face.numpy().astype(np.int32), "uvs": uvs.numpy()}
    if kind in ("ray", "ray_short", "anyhit", "count"):
        o, d = D.QUERY_RAYS[scene]()
        n = len(o)
        face, vals = wp.zeros(n, dtype=int), wp.zeros((n, 7), dtype=float)
        hit, count = wp.zeros(n, dtype=int), wp.zeros(n, dtype=int)
        wp.launch(k_rays, n, inputs=[m.id, v3(o), v3(d), 1.0e6 if kind == "ray" else 1.5,
                                     face, vals, hit, count])
        if kind == "anyhit":
            return {"hit": hit.numpy().astype(np.int32)}
        if kind == "count":
            return {"count": count.numpy().astype(np.int32)}
        return {"face": face.numpy().astype(np.int32), "vals": vals.numpy()}
    q = D.QUERY_POINTS[scene]()
    if kind in ("aabb", "sphere"):
        count = wp.zeros(len(q), dtype=int)
        items = wp.full((len(q), 48), -1, dtype=int)
        wp.launch(k_mesh_iter, len(q), inputs=[m.id, v3(q), int(kind == "sphere"),
                                               float(D.HALF), float(D.RADIUS), count, items])
        return {"count": count.numpy().astype(np.int32), "items": items.numpy().astype(np.int32)}
    pos = wp.zeros((len(q), 6), dtype=float)
    wp.launch(k_eval, len(q), inputs=[m.id, v3(q), pos])
    gp = wp.zeros((len(idx), 3), dtype=float)
    gi = wp.zeros(len(idx), dtype=int)
    wp.launch(k_get, len(idx), inputs=[m.id, gp, gi])
    return {"pos": pos.numpy(), "get_point": gp.numpy(), "get_index": gi.numpy().astype(np.int32)}


def read_tree(addr):
    """Warp's CPU BVH (``wp::BVH`` at ``addr``): its pre-order walk, right child first, as
    (leaf flag, primitive ids or (), lower, upper) per node, zeros' signs dropped."""
    rd = lambda off, t: t.from_address(addr + off).value  # noqa: E731
    lows, ups, prims = rd(0, ctypes.c_uint64), rd(8, ctypes.c_uint64), rd(32, ctypes.c_uint64)
    num_nodes, num_items = rd(48, ctypes.c_int32), rd(88, ctypes.c_int32)
    root = ctypes.c_int32.from_address(rd(56, ctypes.c_uint64)).value

    def nodes(ptr):
        raw = np.ctypeslib.as_array((ctypes.c_uint8 * (16 * num_nodes)).from_address(ptr))
        return raw.view(np.float32).reshape(-1, 4).copy(), raw.view(np.uint32).reshape(-1, 4)[
            :, 3].copy()
    fl, il = nodes(lows)
    fu, iu = nodes(ups)
    pr = np.ctypeslib.as_array((ctypes.c_int32 * num_items).from_address(prims)).copy()
    out = []
    stack = [root]
    while stack:
        n = stack.pop()
        leaf = bool(il[n] >> 31)
        lo, hi = int(il[n] & 0x7FFFFFFF), int(iu[n] & 0x7FFFFFFF)
        out.append((leaf, tuple(int(x) for x in pr[lo:hi]) if leaf else (),
                    tuple(float(x) + 0.0 for x in fl[n, :3]),
                    tuple(float(x) + 0.0 for x in fu[n, :3])))
        if not leaf:
            stack += [lo, hi]
    return out


TREES = {"boxes_1": lambda: (*S.boxes(), 1), "boxes_4": lambda: (*S.boxes(), 4),
         "torus_4": lambda: (*tri_boxes(*S.torus(40, 30, noise=0.05)), 4),
         "torus_1": lambda: (*tri_boxes(*S.torus(40, 30, noise=0.05)), 1),
         "dupes_2": lambda: (*S.dupes(), 2)}


def tri_boxes(pts, idx):
    t = pts[idx.reshape(-1, 3)]
    return t.min(1), t.max(1)


def main():
    ref = {}
    for name in D.CASES:
        res = run_case(name)
        ref[name] = {"sha256": S.digest(res),
                     "head": {k: (v[:3, :8] if v.ndim == 2 else v[:3]).tolist()
                              for k, v in sorted(res.items())}}
        print(name, ref[name]["sha256"][:12])
    trees = {}
    for name, make in TREES.items():
        lo, up, leaf = make()
        b = wp.Bvh(v3(lo), v3(up), leaf_size=leaf)
        walk = read_tree(b.id)
        trees[name] = {"sha256": S.tree_digest(walk), "nodes": len(walk)}
    with open(OUT, "w") as f:
        f.write('"""Warp 1.19 CPU outputs of the mesh/BVH cases (generated by '
                'make_mesh_reference.py; do not edit)."""\n')
        f.write("# flake8: noqa\n")
        f.write(f"WARP_VERSION = {wp.config.version!r}\n")
        f.write("CASES = " + pprint.pformat(ref, width=99, compact=True) + "\n")
        f.write("TREES = " + pprint.pformat(trees, width=99) + "\n")


if __name__ == "__main__":
    main()
