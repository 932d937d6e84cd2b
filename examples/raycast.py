"""Ray casting a triangle mesh, and the image's gradient with respect to the mesh's vertices.

A terrain (a height field triangulated into a ``wp.Mesh``) is seen by a pinhole camera
above it: one thread per pixel casts a ray (``wp.mesh_query_ray``) and writes the hit's depth
``t`` and a Lambert shading of the face's normal. The depth image is differentiable with respect
to the vertices: the face a ray hits is a discrete choice (constant), and ``t`` is recomputed
from that face's three points, so ``tape.backward`` puts the gradient into
``mesh.points.grad``.

The script

1. renders the initial terrain (flat) and a target terrain (hills), writes both as PNGs
   (shading and depth side by side; Pillow, ``pip install weft[examples]``);
2. checks the gradient of the loss ``mean((depth - target_depth)^2)`` with respect to all the
   vertices' coordinates against a central finite difference along a random direction (move
   the vertices, ``mesh.refit()``, render again);
3. runs gradient descent on the vertices' heights until the rendered depth matches the
   target's, refitting the BVH after each step, and writes the result.

    python examples/raycast.py [out_dir] [width]

``main`` returns a dict of the figures it printed (the test runs it at a small resolution).
"""
from __future__ import annotations

import os
import sys

import numpy as np

import weft as wp

CAMERA = (0.0, 0.0, 3.0)   # pinhole above the terrain, looking down -z
HALF_WIDTH = 0.35          # tan of half the field of view: the image sees |x|, |y| < ~1
LIGHT = (0.4, -0.5, 0.77)


@wp.kernel
def render(mesh: wp.uint64, cam: wp.vec3, width: int, half: float, light: wp.vec3,
           depth: wp.array2d(dtype=float), shade: wp.array2d(dtype=float)):
    i, j = wp.tid()
    x = (2.0 * (float(j) + 0.5) / float(width) - 1.0) * half
    y = (1.0 - 2.0 * (float(i) + 0.5) / float(width)) * half
    d = wp.normalize(wp.vec3(x, y, -1.0))
    r = wp.mesh_query_ray(mesh, cam, d, 100.0)
    if r.result:
        depth[i, j] = r.t
        shade[i, j] = 0.15 + 0.85 * wp.max(wp.dot(r.normal, light), 0.0)
    else:
        depth[i, j] = 0.0
        shade[i, j] = 0.0


def terrain(n, heights=None):
    """An n x n grid of vertices over [-1.2, 1.2]^2, two triangles per cell (normals up)."""
    s = np.linspace(-1.2, 1.2, n)
    x, y = np.meshgrid(s, s, indexing="xy")
    z = np.zeros_like(x) if heights is None else heights(x, y)
    points = np.stack([x, y, z], -1).reshape(-1, 3).astype(np.float32)
    k = np.arange(n * n).reshape(n, n)
    a, b, c, d = k[:-1, :-1], k[:-1, 1:], k[1:, :-1], k[1:, 1:]
    faces = np.concatenate([np.stack([a, b, d], -1).reshape(-1, 3),
                            np.stack([a, d, c], -1).reshape(-1, 3)])
    return points, faces.astype(np.int32).ravel()


def hills(x, y):
    return 0.25 * np.sin(2.0 * x) * np.cos(2.5 * y) + 0.1 * np.exp(-4 * (x * x + y * y))


class Camera:
    def __init__(self, width):
        self.width = width
        self.depth = wp.zeros((width, width), dtype=float, requires_grad=True)
        self.shade = wp.zeros((width, width), dtype=float)
        light = np.array(LIGHT) / np.linalg.norm(LIGHT)
        self.light = wp.vec3(*light.astype(np.float32))

    def launch(self, mesh):
        wp.launch(render, (self.width, self.width),
                  inputs=[mesh.id, wp.vec3(*CAMERA), self.width, HALF_WIDTH, self.light,
                          self.depth, self.shade])

    def images(self, mesh):
        self.launch(mesh)
        return self.depth.numpy().astype(np.float64), self.shade.numpy().astype(np.float64)


def loss_and_seed(depth, target):
    """``mean((depth - target)^2)`` and its gradient with respect to the depth image."""
    r = depth - target
    return float(np.mean(r * r)), (2.0 * r / r.size).astype(np.float32)


def gradient(mesh, camera, target):
    """(loss, d loss / d points) by one launch under a tape and its backward."""
    mesh.points.grad.zero_()
    tape = wp.Tape()
    with tape:
        camera.launch(mesh)
    loss, seed = loss_and_seed(camera.depth.numpy().astype(np.float64), target)
    tape.backward(grads={camera.depth: seed})
    return loss, mesh.points.grad.numpy().astype(np.float64)


def check_gradient(mesh, camera, target, eps=1e-3, seed=0):
    """The adjoint's directional derivative against a central finite difference."""
    _, g = gradient(mesh, camera, target)
    direction = np.random.default_rng(seed).normal(size=g.shape)
    direction /= np.linalg.norm(direction)
    base = mesh.points.numpy().copy()
    values = []
    for sign in (1, -1):
        mesh.points._data[:] = base + sign * eps * direction
        mesh.refit()
        values.append(loss_and_seed(camera.images(mesh)[0], target)[0])
    mesh.points._data[:] = base
    mesh.refit()
    fd = (values[0] - values[1]) / (2 * eps)
    return float(np.sum(g * direction)), fd


def save(path, depth, shade):
    """Shading and depth side by side as an 8-bit grey PNG."""
    from PIL import Image
    hit = depth > 0
    lo, hi = (depth[hit].min(), depth[hit].max()) if hit.any() else (0.0, 1.0)
    near = np.where(hit, 1.0 - 0.8 * (depth - lo) / max(hi - lo, 1e-9), 0.0)
    img = np.concatenate([shade, near], axis=1)
    Image.fromarray((np.clip(img, 0, 1) * 255).astype(np.uint8), "L").save(path)


def main(out_dir=".", width=128, grid=33, steps=60, rate=None):
    camera = Camera(width)
    target_mesh = wp.Mesh(*[wp.array(a, dtype=t) for a, t in zip(terrain(grid, hills),
                                                                 (wp.vec3, wp.int32))])
    target, target_shade = camera.images(target_mesh)
    pts, idx = terrain(grid)
    mesh = wp.Mesh(points=wp.array(pts, dtype=wp.vec3, requires_grad=True),
                   indices=wp.array(idx, dtype=wp.int32))
    depth, shade = camera.images(mesh)
    assert (depth > 0).all() and (target > 0).all(), "every ray should hit the terrain"

    adjoint, fd = check_gradient(mesh, camera, target)
    rel = abs(adjoint - fd) / max(abs(fd), 1e-12)
    print(f"d loss along a random direction of the vertices: adjoint {adjoint:.6e}, "
          f"finite difference {fd:.6e} (relative difference {rel:.1e})")

    # gradient descent on the heights (the z of every vertex); a step scaled to the pixels
    # per vertex, so the same rate works at any resolution
    rate = rate if rate is not None else 0.5 * grid * grid
    first = loss = loss_and_seed(depth, target)[0]
    for step in range(steps):
        loss, g = gradient(mesh, camera, target)
        p = mesh.points.numpy()
        p[:, 2] -= rate * g[:, 2]
        mesh.points._data[:] = p
        mesh.refit()
    final_depth, final_shade = camera.images(mesh)
    loss = loss_and_seed(final_depth, target)[0]
    print(f"depth loss: {first:.3e} at the start, {loss:.3e} after {steps} steps "
          f"({width}x{width} pixels, {len(idx) // 3} triangles)")
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("Pillow is not installed: no images (pip install weft[examples])")
    else:
        os.makedirs(out_dir, exist_ok=True)
        for name, (dd, ss) in {"raycast_start.png": (depth, shade),
                               "raycast_target.png": (target, target_shade),
                               "raycast_fitted.png": (final_depth, final_shade)}.items():
            save(os.path.join(out_dir, name), dd, ss)
        print(f"wrote raycast_start.png, raycast_target.png, raycast_fitted.png in {out_dir}")
    return {"adjoint": adjoint, "fd": fd, "relative": rel, "first_loss": first,
            "final_loss": loss}


if __name__ == "__main__":
    out = main(sys.argv[1] if len(sys.argv) > 1 else ".",
               int(sys.argv[2]) if len(sys.argv) > 2 else 128)
    sys.exit(0 if out["relative"] < 1e-2 and out["final_loss"] < 0.1 * out["first_loss"]
             else 1)
