"""The mesh benchmarks' scene (``bench_mesh.py``, ``bench_geometry.py``): a noisy g x g torus and
random rays and closest-point queries around it."""
import numpy as np


def torus(g, noise=0.02, seed=0):
    """A g x g torus (radii 1, 0.35), radial noise: (points (g^2, 3), indices (6 g^2,))."""
    u = np.linspace(0, 2 * np.pi, g, endpoint=False)
    U, V = np.meshgrid(u, u, indexing="ij")
    r = 0.35 * (1 + noise * np.random.default_rng(seed).standard_normal(U.shape))
    pts = np.stack([(1 + r * np.cos(V)) * np.cos(U), (1 + r * np.cos(V)) * np.sin(U),
                    r * np.sin(V)], -1).reshape(-1, 3).astype(np.float32)
    i, j = np.meshgrid(np.arange(g), np.arange(g), indexing="ij")
    a = i * g + j
    b = ((i + 1) % g) * g + j
    c = ((i + 1) % g) * g + (j + 1) % g
    d = i * g + (j + 1) % g
    tri = np.stack([np.stack([a, b, c], -1), np.stack([a, c, d], -1)], -2).reshape(-1, 3)
    return pts, tri.astype(np.int32).ravel()


def queries(n_rays, n_points, seed=1):
    """Rays (origins in [-2, 2]^3 aimed at the torus' region, unit directions) and
    closest-point queries in [-1.6, 1.6]^3."""
    rng = np.random.default_rng(seed)
    o = rng.uniform(-2, 2, (n_rays, 3)).astype(np.float32)
    tgt = rng.uniform(-1, 1, (n_rays, 3)) * np.array([1.0, 1.0, 0.3])
    d = tgt - o
    d = (d / np.linalg.norm(d, axis=1, keepdims=True)).astype(np.float32)
    q = rng.uniform(-1.6, 1.6, (n_points, 3)).astype(np.float32)
    return o, d, q


def triangle_boxes(pts, idx):
    """Lower and upper corners of every triangle (the items of a BVH over the mesh)."""
    tri = pts[idx.reshape(-1, 3)]
    return tri.min(axis=1), tri.max(axis=1)
