"""Scenes and query sets of the mesh/BVH tests, shared by the tests and by
``make_mesh_reference.py`` (which runs them through Warp 1.19): plain numpy, seeded.

Each result is a dict of arrays with fixed dtypes (int32 faces/items, -1 where nothing was
found; float32 values, 0 where nothing was found), so that weft's and Warp's outputs can be
hashed and compared bit for bit (``digest``).
"""
import hashlib

import numpy as np

BIG = np.float32(1.0e6)


def torus(nu, nv, R=1.0, r=0.35, noise=0.0, seed=0):
    """A closed torus mesh with outward normals: (points (nu*nv, 3) float32, indices)."""
    u = np.linspace(0, 2 * np.pi, nu, endpoint=False)
    v = np.linspace(0, 2 * np.pi, nv, endpoint=False)
    U, V = np.meshgrid(u, v, indexing="ij")
    rr = r * (1 + noise * np.random.default_rng(seed).standard_normal(U.shape))
    pts = np.stack([(R + rr * np.cos(V)) * np.cos(U), (R + rr * np.cos(V)) * np.sin(U),
                    rr * np.sin(V)], -1).reshape(-1, 3).astype(np.float32)
    i, j = np.meshgrid(np.arange(nu), np.arange(nv), indexing="ij")
    a = i * nv + j
    b = ((i + 1) % nu) * nv + j
    c = ((i + 1) % nu) * nv + (j + 1) % nv
    d = i * nv + (j + 1) % nv
    tri = np.stack([np.stack([a, b, c], -1), np.stack([a, c, d], -1)], -2).reshape(-1, 3)
    return pts, tri.astype(np.int32).ravel()


def cube():
    """The unit cube [0, 1]^3, two triangles per face, normals outward."""
    pts = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1],
                    [1, 1, 1], [0, 1, 1]], np.float32)
    idx = np.array([0, 3, 2, 0, 2, 1, 4, 5, 6, 4, 6, 7, 0, 1, 5, 0, 5, 4,
                    2, 3, 7, 2, 7, 6, 0, 4, 7, 0, 7, 3, 1, 2, 6, 1, 6, 5], np.int32)
    return pts, idx


def degenerate():
    """The cube plus degenerate faces: a zero-area (collinear) face, a face collapsed to a
    point, a sliver, and a face that reuses a vertex twice, all near the cube."""
    pts, idx = cube()
    extra = np.array([[2, 0, 0], [3, 0, 0], [4, 0, 0],            # collinear
                      [2, 2, 2],                                   # a point (used 3 times)
                      [2, 3, 0], [3, 3, 0], [2.5, 3, 1e-7]], np.float32)   # sliver
    pts = np.concatenate([pts, extra])
    more = np.array([8, 9, 10, 11, 11, 11, 12, 13, 14, 0, 1, 1], np.int32)
    return pts, np.concatenate([idx, more])


def boxes(n=400, seed=5):
    """Random boxes for the BVH tests: (lowers, uppers) float32."""
    rng = np.random.default_rng(seed)
    lo = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    up = (lo + rng.uniform(0, 0.25, (n, 3))).astype(np.float32)
    return lo, up


def points(n=400, seed=1, lo=-1.6, hi=1.6):
    return np.random.default_rng(seed).uniform(lo, hi, (n, 3)).astype(np.float32)


def cube_points():
    """Query points on and around the cube: its centre (equidistant from six faces), vertices,
    edge midpoints, face centres, points just inside and outside, and far away."""
    g = np.array([-0.5, 0.0, 0.25, 0.5, 1.0, 1.5], np.float32)
    grid = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    return np.concatenate([grid, np.array([[0.5, 0.5, 0.5], [1e-6, 0.5, 0.5],
                                           [0.5, 0.5, -1e-6], [3, 3, 3]], np.float32)])


def rays(n=400, seed=2):
    """Random rays aimed at the torus' region, some with zero direction components."""
    rng = np.random.default_rng(seed)
    o = rng.uniform(-2, 2, (n, 3)).astype(np.float32)
    d = (rng.uniform(-1, 1, (n, 3)) * [1, 1, 0.3] - o).astype(np.float32)
    d[:40, 2] = 0
    d[40:60, 0] = 0
    d[60:70, 1:] = 0
    return o, d


def cube_rays():
    """Rays at the cube: through face centres, shared diagonals, edges and vertices, along
    faces (parallel, in their planes) and from inside, with axis-aligned and oblique
    directions."""
    o = []
    d = []
    for x in (0.0, 0.25, 0.5, 1.0):
        for y in (0.0, 0.5, 0.75, 1.0):
            o.append((x, y, -1.0))
            d.append((0.0, 0.0, 1.0))
            o.append((x, y, 2.0))
            d.append((0.0, 0.0, -1.0))
            o.append((-1.0, x, y))
            d.append((1.0, 0.0, 0.0))
    o += [(-1, -1, -1), (2, 2, 2), (0.5, 0.5, 0.5), (0.5, 0.5, 0.5), (0.5, -1, 0.0),
          (-1, 0.5, 1.0), (0.5, 0.5, -1), (0.2, 0.3, 0.5)]
    d += [(1, 1, 1), (-1, -1, -1), (0, 0, 1), (1, 1, 1), (0, 1, 0), (1, 0, 0), (1e-30, 0, 1),
          (0.3, -0.2, 0.1)]
    return np.array(o, np.float32), np.array(d, np.float32)


def digest(arrays):
    """SHA-256 over a dict of arrays (sorted names, each with its dtype and shape)."""
    h = hashlib.sha256()
    for k in sorted(arrays):
        a = np.ascontiguousarray(arrays[k])
        h.update(f"{k}:{a.dtype.str}:{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def point_result(found, face, u, v, sign):
    """Canonical arrays of closest-point results (zeros and -1 where nothing was found)."""
    found = np.asarray(found, bool)
    return {"face": np.where(found, face, -1).astype(np.int32),
            "uvs": np.where(found[:, None], np.stack([u, v, sign], 1), 0).astype(np.float32)}


def ray_result(found, t, u, v, sign, normal, face):
    found = np.asarray(found, bool)
    vals = np.concatenate([np.stack([t, u, v, sign], 1), normal], 1)
    return {"face": np.where(found, face, -1).astype(np.int32),
            "vals": np.where(found[:, None], vals, 0).astype(np.float32)}


def sequences(seqs, width=48):
    """Iteration sequences as (count, first ``width`` items padded with -1)."""
    out = np.full((len(seqs), width), -1, np.int32)
    for i, s in enumerate(seqs):
        out[i, :min(width, len(s))] = s[:width]
    return {"count": np.array([len(s) for s in seqs], np.int32), "items": out}


def dupes(n=600, seed=9):
    """Boxes with many equal centroids (coordinates on a 0.1 grid, some repeated)."""
    rng = np.random.default_rng(seed)
    lo = np.round(rng.uniform(-1, 1, (n, 3)), 1).astype(np.float32)
    return lo, (lo + np.float32(0.05)).astype(np.float32)


def tree_digest(walk):
    """SHA-256 of a BVH's pre-order walk: (leaf flag, primitive ids, lower, upper) per node,
    bounds as float32 with the signs of zeros dropped."""
    h = hashlib.sha256()
    for leaf, prims, lo, up in walk:
        h.update(b"L" if leaf else b"N")
        h.update(np.asarray(prims, np.int32).tobytes())
        h.update((np.asarray(lo + up, np.float32) + np.float32(0.0)).tobytes())
    return h.hexdigest()


def triangle_pairs(n=300, seed=12):
    """Triangle pairs (n, 18) float32: random, then coplanar overlapping, coplanar disjoint,
    touching at a vertex, and sharing an edge."""
    rng = np.random.default_rng(seed)
    t = rng.uniform(-1, 1, (n, 18)).astype(np.float32)
    flat = rng.uniform(-1, 1, (40, 18)).astype(np.float32)
    flat[:, 2::3] = 0.25                                  # both triangles in z = 0.25
    flat[20:, 9:18:3] += 3                                # half of them apart
    touch = t[:20].copy()
    touch[:, 9:12] = touch[:, 0:3]                        # a shared vertex
    edge = t[20:40].copy()
    edge[:, 9:15] = edge[:, 0:6]                          # a shared edge
    return np.concatenate([t, flat, touch, edge])


def edge_pairs(n=300, seed=13):
    """Segment pairs (n, 12) float32: random, parallel, a point, two points, crossing."""
    rng = np.random.default_rng(seed)
    e = rng.uniform(-1, 1, (n, 12)).astype(np.float32)
    e[:30, 9:12] = e[:30, 6:9] + (e[:30, 3:6] - e[:30, 0:3])     # parallel
    e[30:40, 3:6] = e[30:40, 0:3]                                 # first is a point
    e[40:50, 3:6] = e[40:50, 0:3]
    e[40:50, 9:12] = e[40:50, 6:9]                                # both points
    e[50:60, 6:9] = -e[50:60, 9:12]                               # through the origin
    e[50:60, 0:3] = -e[50:60, 3:6]
    return e
