"""Exact gradients through MuJoCo Warp's ``step``, which Warp itself cannot give.

MuJoCo Warp (``pip install mujoco absl-py "etils[epath]"`` then
``pip install --no-deps mujoco-warp==4.0.0``) turns Warp's backward pass off in every module
(``enable_backward: False``) and allocates its buffers without gradients. Two weft switches
differentiate it anyway, unchanged:

- ``wp.config.force_backward = True``: weft generates and runs every kernel's adjoint;
- ``wp.config.grad_all_arrays = True``: each array a taped launch reads or writes gets a
  gradient, so the adjoint flows through MuJoCo Warp's own buffers and temporaries.

``weft.as_warp()`` makes MuJoCo Warp's ``import warp`` give weft. A cart-pole (a slide joint and
a hinge, a motor on the cart) takes ``STEPS`` steps on a ``wp.Tape`` with ``step`` updating its
``Data`` in place (weft's tape snapshots what is overwritten), and ``backward`` gives the
gradient of a loss on the final state with respect to the initial ``qpos``, ``qvel`` and the
``ctrl`` held over the steps. The check: central differences of MuJoCo's own float64 steps, and
the chain of MuJoCo's one-step derivatives ``mjd_transitionFD`` along the trajectory.

Run: python examples/mjwarp_gradients.py
"""
import numpy as np

import weft

weft.as_warp()

import mujoco  # noqa: E402
import mujoco_warp as mjw  # noqa: E402
import warp as wp  # noqa: E402  (weft)

XML = """
<mujoco model="cartpole">
  <option timestep="0.01"><flag contact="disable"/></option>
  <worldbody>
    <body name="cart" pos="0 0 1">
      <joint name="slider" type="slide" axis="1 0 0" damping="0.05"/>
      <geom type="box" size="0.2 0.1 0.05" mass="1"/>
      <body name="pole">
        <joint name="hinge" type="hinge" axis="0 1 0" damping="0.02"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.6" size="0.04" mass="0.3"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="slider" gear="2"/></actuator>
</mujoco>
"""
STEPS = 5
QPOS0, QVEL0, CTRL = [0.1, 0.4], [0.3, -0.5], [0.7]
W_QPOS, W_QVEL = np.array([1.0, -2.0]), np.array([0.5, 0.25])  # the loss: w . (qpos, qvel)_N


@wp.kernel
def final_loss(qpos: wp.array2d(dtype=float), qvel: wp.array2d(dtype=float),
               w_qpos: wp.array(dtype=float), w_qvel: wp.array(dtype=float),
               loss: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(loss, 0, w_qpos[i] * qpos[0, i] + w_qvel[i] * qvel[0, i])


def model():
    mjm = mujoco.MjModel.from_xml_string(XML)
    mjd = mujoco.MjData(mjm)
    mjd.qpos[:], mjd.qvel[:], mjd.ctrl[:] = QPOS0, QVEL0, CTRL
    return mjm, mjd


def weft_gradients(steps=STEPS):
    """The loss and its gradients (qpos, qvel, ctrl) through ``steps`` MuJoCo Warp steps."""
    wp.config.force_backward = True
    wp.config.grad_all_arrays = True
    mjm, mjd = model()
    m = mjw.put_model(mjm)
    d = mjw.put_data(mjm, mjd)
    for a in (d.qpos, d.qvel, d.ctrl):
        a.requires_grad = True
    loss = wp.zeros(1, dtype=float, requires_grad=True)
    w_qpos = wp.array(W_QPOS.astype(np.float32))
    w_qvel = wp.array(W_QVEL.astype(np.float32))
    tape = wp.Tape()
    with tape:
        for _ in range(steps):
            mjw.step(m, d)
        wp.launch(final_loss, dim=mjm.nv, inputs=[d.qpos, d.qvel, w_qpos, w_qvel],
                  outputs=[loss])
    tape.backward(loss)
    grads = (d.qpos.grad.numpy()[0].copy(), d.qvel.grad.numpy()[0].copy(),
             d.ctrl.grad.numpy()[0].copy())
    final = (d.qpos.numpy()[0].copy(), d.qvel.numpy()[0].copy())
    tape.zero()
    return float(loss.numpy()[0]), grads, final


def mujoco_rollout(qpos, qvel, ctrl, steps=STEPS):
    """MuJoCo's own float64 steps: the final (qpos, qvel) and the loss."""
    mjm, mjd = model()
    mjd.qpos[:], mjd.qvel[:], mjd.ctrl[:] = qpos, qvel, ctrl
    mujoco.mj_step(mjm, mjd, nstep=steps)
    return mjd.qpos.copy(), mjd.qvel.copy(), float(W_QPOS @ mjd.qpos + W_QVEL @ mjd.qvel)


def finite_differences(eps=1e-6, steps=STEPS):
    """Central differences of the float64 loss in each of qpos, qvel and ctrl."""
    base = [np.array(QPOS0, float), np.array(QVEL0, float), np.array(CTRL, float)]
    grads = []
    for k, x in enumerate(base):
        g = np.zeros_like(x)
        for j in range(x.size):
            args = [b.copy() for b in base]
            args[k][j] += eps
            hi = mujoco_rollout(*args, steps=steps)[2]
            args[k][j] -= 2 * eps
            lo = mujoco_rollout(*args, steps=steps)[2]
            g[j] = (hi - lo) / (2 * eps)
        grads.append(g)
    return grads


def transition_gradients(steps=STEPS):
    """The same gradients from MuJoCo's one-step Jacobians ``mjd_transitionFD`` (A: state to
    next state, B: control to next state, state = (qpos tangent, qvel)), chained along the
    trajectory: dL/dx_k = dL/dx_{k+1} A_k, dL/du = sum_k dL/dx_{k+1} B_k."""
    mjm, mjd = model()
    nv, nu = mjm.nv, mjm.nu
    As, Bs = [], []
    for _ in range(steps):
        A = np.zeros((2 * nv, 2 * nv))
        B = np.zeros((2 * nv, nu))
        mujoco.mjd_transitionFD(mjm, mjd, 1e-7, 1, A, B, None, None)
        As.append(A)
        Bs.append(B)
        mujoco.mj_step(mjm, mjd)
    g = np.concatenate([W_QPOS, W_QVEL])
    g_ctrl = np.zeros(nu)
    for A, B in zip(reversed(As), reversed(Bs)):
        g_ctrl += g @ B
        g = g @ A
    return [g[:nv], g[nv:], g_ctrl]


def main():
    loss, grads, final = weft_gradients()
    qpos, qvel, loss64 = mujoco_rollout(QPOS0, QVEL0, CTRL)
    fd = finite_differences()
    tr = transition_gradients()
    np.set_printoptions(precision=6, suppress=True)
    print(f"{STEPS} steps of a cart-pole; loss {loss:.6f} (MuJoCo, float64: {loss64:.6f})")
    print(f"final qpos {final[0]} qvel {final[1]} (MuJoCo: {qpos} {qvel})")
    for name, g, f, t in zip(("qpos", "qvel", "ctrl"), grads, fd, tr):
        print(f"dL/d{name:5s} weft {g}  finite differences {f}  mjd_transitionFD {t}")
    worst = max(float(np.max(np.abs(g - f)) / max(1.0, float(np.max(np.abs(f)))))
                for g, f in zip(grads, fd))
    print(f"largest difference from finite differences: {worst:.2e} (float32 steps)")


if __name__ == "__main__":
    main()
