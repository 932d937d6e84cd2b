"""Three projectiles with quadratic air drag, their launch velocities optimised so that each lands
on a target (15 iterations of gradient descent), the flight differentiated three ways:

(a) automatically: the flight is a ``wp.loop`` of 150 steps on the tape (checkpointed), the drag
    coefficients a parameter its body reads;
(b) a ``wp.CustomOp`` that stores every state in ``eval`` and runs the step kernel's adjoint
    (``wp.launch(..., adjoint=True)``) backwards over them;
(c) a ``wp.CustomOp`` that stores nothing but the final state and walks the flight backwards by
    time reversal (``x_i = x_{i+1} - dt v_{i+1}``, ``v_i ~ v_{i+1} - dt a(v_{i+1})``: exact for
    positions, approximate for velocities because drag dissipates), an O(1)-memory
    approximation of (b).

The gradients of the first iteration are compared with each other (and with JAX's, when JAX
is importable); (a) and (b) agree to rounding, (c) to the time-reversal error. Writes PNG frames
of the three optimisations and an animated GIF (Pillow), and a plot with matplotlib when
installed.

Run: python examples/ballistic.py [--out DIR]
"""
import argparse
import os

import numpy as np

import weft as wp
from weft.libs.optim import SGD

f64 = wp.float64
vec = wp.vec2d
STEPS, DT, G = 150, 0.01, 9.81
TARGET = (9.0, 1.0)
X0 = np.array([[0.0, 0.0], [0.0, 1.0], [0.0, 2.5]])
V0 = np.array([[5.0, 5.0], [5.0, 5.0], [5.0, 5.0]])
DRAG = np.array([0.02, 0.05, 0.1])


@wp.kernel
def step(x: wp.array(dtype=vec), v: wp.array(dtype=vec), c: wp.array(dtype=f64), dt: f64,
         x_out: wp.array(dtype=vec), v_out: wp.array(dtype=vec)):
    i = wp.tid()
    vi = v[i]
    a = vec(f64(0.0), f64(-G)) - c[i] * wp.length(vi) * vi
    vn = vi + a * dt
    v_out[i] = vn
    x_out[i] = x[i] + vn * dt


@wp.kernel
def step_back(x: wp.array(dtype=vec), v: wp.array(dtype=vec), c: wp.array(dtype=f64), dt: f64,
              x_out: wp.array(dtype=vec), v_out: wp.array(dtype=vec)):
    """The step run backwards in time (the drag term evaluated at the later velocity)."""
    i = wp.tid()
    vn = v[i]
    x_out[i] = x[i] - vn * dt
    a = vec(f64(0.0), f64(-G)) - c[i] * wp.length(vn) * vn
    v_out[i] = vn - a * dt


@wp.kernel
def miss(x: wp.array(dtype=vec), target: vec, loss: wp.array(dtype=f64)):
    i = wp.tid()
    d = x[i] - target
    wp.atomic_add(loss, 0, wp.dot(d, d))


def new_state(n):
    return wp.zeros(n, dtype=vec, requires_grad=True), wp.zeros(n, dtype=vec, requires_grad=True)


def body_for(c):
    def body(i, s):
        x, v = s
        xn, vn = new_state(len(x))
        wp.launch(step, dim=len(x), inputs=[x, v, c, DT], outputs=[xn, vn])
        return xn, vn
    return body


class Flight(wp.CustomOp):
    """The flight as one custom op; subclasses say where backward gets the states from."""

    def eval(self, x0, v0, c):
        self.x0, self.v0, self.c = x0, v0, c
        self.states = [(x0, v0)]
        s = (x0, v0)
        for _ in range(STEPS):
            xn, vn = new_state(len(x0))
            wp.launch(step, dim=len(x0), inputs=[s[0], s[1], c, DT], outputs=[xn, vn])
            s = (xn, vn)
            self.keep(s)
        return s

    def backward(self):
        ax, av = (wp.clone(g) for g in self.grad_out())
        ac = wp.zeros_like(self.c)
        for i, (x, v), (xn, vn) in self.reversed_steps():
            gx, gv = wp.zeros_like(x), wp.zeros_like(v)
            wp.launch(step, dim=len(x), inputs=[x, v, self.c, DT], outputs=[xn, vn],
                      adj_inputs=[gx, gv, ac, None], adj_outputs=[ax, av], adjoint=True)
            ax, av = gx, gv
        self.set_grad_in("x0", ax)
        self.set_grad_in("v0", av)
        self.set_grad_in("c", ac)

    def forward(self):
        """Tangents by running the flight again from the inputs with wp.jvp (no storage)."""
        tx, tv, tc = self.grad_in("x0"), self.grad_in("v0"), self.grad_in("c")
        s = (self.x0, self.v0)
        for _ in range(STEPS):
            xn, vn = new_state(len(s[0]))
            t = wp.jvp(step, len(xn), inputs=[s[0], s[1], self.c, DT], outputs=[xn, vn],
                       tangents={s[0]: tx, s[1]: tv, self.c: tc})
            tx, tv, s = t[xn], t[vn], (xn, vn)
        self.set_grad_out((tx, tv))


class StoredStates(Flight):
    """(b): every state of the flight kept by eval."""

    def keep(self, s):
        self.states.append(s)

    def reversed_steps(self):
        for i in reversed(range(STEPS)):
            yield i, self.states[i], self.states[i + 1]


class TimeReversal(Flight):
    """(c): only the final state kept; earlier states rebuilt by running time backwards."""

    def keep(self, s):
        self.states[1:] = [s]

    def reversed_steps(self):
        later = self.states[-1]
        for i in reversed(range(STEPS)):
            xb, vb = new_state(len(later[0]))
            wp.launch(step_back, dim=len(xb), inputs=[later[0], later[1], self.c, DT],
                      outputs=[xb, vb])
            yield i, (xb, vb), later
            later = (xb, vb)


def flight(method, x0, v0, c):
    if method == "automatic (wp.loop)":
        return wp.loop(body_for(c), (x0, v0), STEPS)
    op = StoredStates if method.startswith("custom op, stored") else TimeReversal
    return wp.custom(op, x0, v0, c)


METHODS = ["automatic (wp.loop)", "custom op, stored states", "custom op, time reversal"]


def gradients(method, v0_np):
    """(loss, {'v0', 'c', 'x0'} gradients, tape) of the miss distance."""
    params = {"x0": wp.array(X0, dtype=vec, requires_grad=True),
              "v0": wp.array(v0_np, dtype=vec, requires_grad=True),
              "c": wp.array(DRAG, dtype=f64, requires_grad=True)}
    loss = wp.zeros(1, dtype=f64, requires_grad=True)
    tape = wp.Tape()
    with tape:
        x, _ = flight(method, params["x0"], params["v0"], params["c"])
        wp.launch(miss, dim=len(X0), inputs=[x, vec(*TARGET)], outputs=[loss])
    tape.backward(loss)
    return loss.numpy()[0], {k: g.numpy().copy() for k, g in wp.grad(params).items()}, tape


def trajectory(v0_np):
    """Positions of the projectiles at every step (plain launches, for the pictures)."""
    c = wp.array(DRAG, dtype=f64)
    s = (wp.array(X0, dtype=vec), wp.array(v0_np, dtype=vec))
    out = [X0.copy()]
    body = body_for(c)
    for i in range(STEPS):
        s = body(i, s)
        out.append(s[0].numpy().copy())
    return np.array(out)


def optimise(method, iterations=15, lr=0.4):
    """Gradient descent on the launch velocities (weft.optim.SGD over a PyTree); returns the
    velocities and miss distances of every iteration."""
    v0 = wp.array(V0, dtype=vec, requires_grad=True)
    x0 = wp.array(X0, dtype=vec)
    c = wp.array(DRAG, dtype=f64)
    params = {"v0": v0}
    opt = SGD(params, lr=lr)
    history = []
    for _ in range(iterations + 1):
        loss = wp.zeros(1, dtype=f64, requires_grad=True)
        tape = wp.Tape()
        with tape:
            x, _ = flight(method, x0, v0, c)
            wp.launch(miss, dim=len(X0), inputs=[x, vec(*TARGET)], outputs=[loss])
        history.append((v0.numpy().copy(), float(loss.numpy()[0])))
        tape.backward(loss)
        opt.step(wp.grad(params))
        tape.zero()
    return history


def jax_gradients(v0_np):
    """The same gradients from JAX (float64), or None when JAX is not importable."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)

    def loss(x0, v0, c):
        def one(s, _):
            x, v = s
            a = jnp.array([0.0, -G]) - c[:, None] * jnp.linalg.norm(v, axis=1)[:, None] * v
            vn = v + a * DT
            return (x + vn * DT, vn), None
        (x, _), _ = jax.lax.scan(one, (x0, v0), None, length=STEPS)
        return jnp.sum((x - jnp.array(TARGET)) ** 2)
    g = jax.grad(loss, argnums=(0, 1, 2))(jnp.array(X0), jnp.array(v0_np), jnp.array(DRAG))
    return dict(zip(("x0", "v0", "c"), (np.asarray(a) for a in g)))


def compare_gradients():
    rows, ok = [], True
    ref = None
    for method in METHODS:
        loss, g, _ = gradients(method, V0)
        ref = ref or g
        err = max(np.max(np.abs(g[k] - ref[k])) / np.max(np.abs(ref[k])) for k in ref)
        rows.append((method, loss, g["v0"][0], g["c"], err))
    jg = jax_gradients(V0)
    if jg is not None:
        err = max(np.max(np.abs(jg[k] - ref[k])) / np.max(np.abs(ref[k])) for k in ref)
        rows.append(("JAX (lax.scan, grad)", rows[0][1], jg["v0"][0], jg["c"], err))
    print(f"gradients of the miss distance at the first iterate ({STEPS} steps, dt={DT})")
    print(f"{'method':28s} {'loss':>9s} {'dL/dv0[0]':>24s} {'dL/dc':>30s} "
          f"{'rel. diff to (a)':>17s}")
    for name, loss, gv, gc, err in rows:
        print(f"{name:28s} {loss:9.4f} {np.array2string(gv, precision=5):>24s} "
              f"{np.array2string(gc, precision=4):>30s} {err:17.2e}")
    ok &= rows[1][4] < 1e-12 and rows[2][4] < 0.05 and (jg is None or rows[3][4] < 1e-10)
    return ok


def draw_frame(path, paths_by_method, iteration, losses):
    """One PNG frame with Pillow: a panel per method with its three trajectories and the
    target."""
    from PIL import Image, ImageDraw
    pw, h, pad = 400, 300, 24
    lo, hi = np.array([-0.5, -1.0]), np.array([10.5, 5.5])
    img = Image.new("RGB", (pw * len(paths_by_method), h), "white")
    d = ImageDraw.Draw(img)
    colours = [(31, 119, 180), (255, 127, 14), (44, 160, 44)]
    for k, ((name, traj), col, loss) in enumerate(zip(paths_by_method.items(), colours,
                                                       losses)):
        def px(p, k=k):
            q = (np.asarray(p) - lo) / (hi - lo)
            return (float(k * pw + pad + q[0] * (pw - 2 * pad)),
                    float(h - pad - q[1] * (h - 2 * pad)))
        d.line([px((lo[0], 0)), px((hi[0], 0))], fill=(200, 200, 200))
        for j in range(traj.shape[1]):
            d.line([px(p) for p in traj[:, j]], fill=col, width=2)
        tx, ty = px(TARGET)
        d.ellipse([tx - 6, ty - 6, tx + 6, ty + 6], outline=(200, 0, 0), width=3)
        d.text((k * pw + pad, 6), f"{name}", fill=col)
        d.text((k * pw + pad, 20), f"iteration {iteration}, miss {loss:.2e}", fill="black")
        if k:
            d.line([(k * pw, 0), (k * pw, h)], fill=(120, 120, 120))
    img.save(path)
    return img


def main(out_dir=".", iterations=15):
    ok = compare_gradients()
    histories = {m: optimise(m, iterations) for m in METHODS}
    print(f"\nmiss distance (sum of squares) during {iterations} iterations of gradient descent")
    print(f"{'iteration':>9s} " + " ".join(f"{m:>28s}" for m in METHODS))
    for it in range(0, iterations + 1, 3):
        print(f"{it:9d} " + " ".join(f"{histories[m][it][1]:28.3e}" for m in METHODS))
    finals = [histories[m][-1][1] for m in METHODS]
    ok &= all(f < 1e-3 for f in finals)
    try:
        import PIL  # noqa: F401
    except ImportError:
        print("Pillow is not installed: no frames (pip install weft[examples])")
    else:
        folder = os.path.join(out_dir, "ballistic")
        os.makedirs(folder, exist_ok=True)
        frames = []
        for it in range(iterations + 1):
            paths = {m: trajectory(histories[m][it][0]) for m in METHODS}
            frames.append(draw_frame(os.path.join(folder, f"frame_{it:02d}.png"), paths, it,
                                     [histories[m][it][1] for m in METHODS]))
        gif = os.path.join(out_dir, "ballistic.gif")
        frames[0].save(gif, save_all=True, append_images=frames[1:], duration=300, loop=0)
        print(f"wrote {iterations + 1} frames in {folder} and {gif}")
    print("all checks pass" if ok else "CHECK FAILED")
    return ok


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=".", help="folder for the frames and the GIF")
    args = ap.parse_args()
    raise SystemExit(0 if main(args.out) else 1)
