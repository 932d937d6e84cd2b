"""weft's side of the mesh/BVH reference cases: every query of ``mesh_scenes`` run through the
portable cores (a namespace from ``mesh_query.compile_for``, or the module-level Python
functions), producing the canonical result dicts that ``make_mesh_reference.py`` produces from
Warp. ``CASES`` lists the case names; ``run(ns, name)`` computes one."""
import numpy as np

from tests.geometry import mesh_scenes as S
from weft.native.geometry.mesh import Bvh, Mesh

MESHES = {"torus": lambda: (*S.torus(40, 30, noise=0.05), True),
          "cube": lambda: (*S.cube(), False),
          "degenerate": lambda: (*S.degenerate(), False)}
QUERY_POINTS = {"torus": lambda: S.points(400), "cube": S.cube_points,
                "degenerate": S.cube_points}
QUERY_RAYS = {"torus": lambda: S.rays(400), "cube": S.cube_rays, "degenerate": S.cube_rays}
MESH_KINDS = ("point", "point_md", "sign_normal", "winding", "parity", "furthest", "ray",
              "ray_short", "anyhit", "count", "aabb", "sphere", "eval")
BVH_KINDS = ("aabb", "ray", "ray_md", "sphere", "capsule")
CASES = tuple(f"{k}_{m}" for m in MESHES for k in MESH_KINDS) + \
    tuple(f"bvh_{k}_{leaf}" for leaf in (1, 4) for k in BVH_KINDS) + \
    ("pairs_tri_tri", "pairs_tri_tri_d", "pairs_edge_edge")
HALF = np.float32(0.2)
RADIUS = np.float32(0.3)

_meshes = {}


def mesh(name):
    if name not in _meshes:
        pts, idx, wn = MESHES[name]()
        _meshes[name] = Mesh(pts, idx, support_winding_number=wn)
    return _meshes[name]


def bvh(leaf):
    lo, up = S.boxes()
    return Bvh(lo, up, leaf_size=leaf)


def _points(ns, m, q, kind):
    b, lk, p, tris, props = m.arrays()
    out = []
    for x, y, z in q:
        if kind == "point":
            r = ns["mesh_query_point"](b, lk, p, tris, x, y, z, S.BIG)
        elif kind == "point_md":
            r = ns["mesh_query_point_no_sign"](b, lk, p, tris, x, y, z, np.float32(0.3))
        elif kind == "sign_normal":
            r = ns["mesh_query_point_sign_normal"](b, lk, p, tris, m.average_edge_length, x, y,
                                                   z, S.BIG, np.float32(1e-3))
        elif kind == "winding":
            r = ns["mesh_query_point_sign_winding_number"](b, lk, p, tris, props, x, y, z,
                                                           S.BIG, np.float32(2.0),
                                                           np.float32(0.5))
        elif kind == "parity":
            r = ns["mesh_query_point_sign_parity"](b, lk, p, tris, x, y, z, S.BIG, 3,
                                                   np.float32(0.1))
        else:
            r = ns["mesh_query_furthest_point_no_sign"](b, lk, p, tris, x, y, z,
                                                        np.float32(0.5))
        out.append(r)
    f, face, u, v, s = (np.array(c) for c in zip(*out))
    return S.point_result(f, face, u, v, s)


def _rays(ns, m, o, d, kind):
    b, lk, p, tris, props = m.arrays()
    if kind in ("ray", "ray_short"):
        mt = S.BIG if kind == "ray" else np.float32(1.5)
        res = [ns["mesh_query_ray"](b, lk, p, tris, *o[i], *d[i], mt) for i in range(len(o))]
        f, t, u, v, s, nx, ny, nz, face = (np.array(c) for c in zip(*res))
        return S.ray_result(f, t, u, v, s, np.stack([nx, ny, nz], 1), face)
    if kind == "anyhit":
        return {"hit": np.array([ns["mesh_query_ray_anyhit"](b, lk, tris, *o[i], *d[i],
                                                             np.float32(1.5))
                                 for i in range(len(o))], np.int32)}
    return {"count": np.array([ns["mesh_query_ray_count_intersections"](b, lk, tris, *o[i],
                                                                        *d[i])
                               for i in range(len(o))], np.int32)}


def iterate(ns, next_name, state, *arrays, extra=()):
    seq = []
    while True:
        ok, item, state = ns[next_name](*arrays, state, *extra)
        if not ok:
            return seq
        seq.append(int(item))


def _mesh_iter(ns, m, q, kind):
    b, lk, p, tris, props = m.arrays()
    seqs = []
    for x in q:
        if kind == "aabb":
            st = ns["mesh_query_aabb"](lk, *(x - HALF), *(x + HALF))
        else:
            st = ns["mesh_query_sphere"](lk, *x, RADIUS)
        seqs.append(iterate(ns, "mesh_query_next", st, b, lk, p, tris))
    return S.sequences(seqs)


def _eval(ns, m, q):
    """Positions and normals of the closest points' faces, and index/point reads."""
    b, lk, p, tris, props = m.arrays()
    pos = []
    for x, y, z in q:
        ok, face, u, v, s = ns["mesh_query_point_no_sign"](b, lk, p, tris, x, y, z, S.BIG)
        pos.append((*ns["mesh_eval_position"](m.points, m.indices, face, u, v),
                    *ns["mesh_eval_face_normal"](m.points, m.indices, face)))
    n = m.indices.shape[0]
    gp = [ns["mesh_get_point"](m.points, m.indices, k) for k in range(n)]
    gi = [ns["mesh_get_index"](m.indices, k) for k in range(n)]
    return {"pos": np.array(pos, np.float32), "get_point": np.array(gp, np.float32),
            "get_index": np.array(gi, np.int32)}


def _bvh_iter(ns, leaf, kind):
    t = bvh(leaf)
    b, lk, p, lo, up = t.arrays()
    q = S.points(200, seed=7, lo=-1.2, hi=1.2)
    o, d = S.rays(200, seed=8)
    seqs = []
    for i in range(200):
        md = np.float32(np.inf)
        if kind == "aabb":
            st = ns["bvh_query_aabb"](lk, -1, *(q[i] - HALF), *(q[i] + HALF))
        elif kind in ("ray", "ray_md"):
            st = ns["bvh_query_ray"](lk, -1, *o[i], *d[i])
            md = np.float32(1.0) if kind == "ray_md" else md
        elif kind == "sphere":
            st = ns["bvh_query_sphere"](lk, -1, *q[i], RADIUS)
        else:
            st = ns["bvh_query_capsule"](lk, -1, *o[i], *(d[i] * np.float32(0.5)),
                                         np.float32(0.1))
            md = np.float32(1.0)
        seqs.append(iterate(ns, "bvh_query_next", st, b, lk, p, lo, up, extra=(md,)))
    return S.sequences(seqs, width=160)


def _pairs(ns, kind):
    if kind == "edge_edge":
        e = S.edge_pairs()
        return {"st_dist": np.array([ns["closest_point_edge_edge"](*r, np.float32(1e-6))
                                     for r in e], np.float32)}
    t = S.triangle_pairs()
    if kind == "tri_tri_d":
        return {"hit": np.array([ns["intersect_tri_tri_d"](*r) for r in t.astype(np.float64)],
                                np.int32)}
    return {"hit": np.array([ns["intersect_tri_tri"](*r) for r in t], np.int32)}


def run(ns, name):
    """The canonical result dict of case ``name``."""
    if name.startswith("pairs_"):
        return _pairs(ns, name[6:])
    if name.startswith("bvh_"):
        kind, leaf = name[4:].rsplit("_", 1)
        return _bvh_iter(ns, int(leaf), kind)
    kind, scene = name.rsplit("_", 1)
    m = mesh(scene)
    if kind in ("point", "point_md", "sign_normal", "winding", "parity", "furthest"):
        return _points(ns, m, QUERY_POINTS[scene](), kind)
    if kind in ("ray", "ray_short", "anyhit", "count"):
        return _rays(ns, m, *QUERY_RAYS[scene](), kind)
    if kind in ("aabb", "sphere"):
        return _mesh_iter(ns, m, QUERY_POINTS[scene](), kind)
    return _eval(ns, m, QUERY_POINTS[scene]())
