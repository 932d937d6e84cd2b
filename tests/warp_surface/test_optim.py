"""weft.optim (Warp's warp.optim): SGD and Adam, three steps each; the expected parameters are
Warp 1.19's results for the same calls (float32 values printed by Warp)."""
import numpy as np
import pytest

import weft as wp
from weft.libs.optim import SGD, Adam


def _sgd(**kw):
    p = wp.array([1.0, -2.0, 3.0], dtype=float)
    g = wp.array([0.5, 0.25, -1.0], dtype=float)
    opt = SGD([p], **kw)
    for _ in range(3):
        opt.step([g])
    return p.numpy()


@pytest.mark.parametrize("kw, expected", [
    (dict(lr=0.1), [0.8499999642372131, -2.075000286102295, 3.299999713897705]),
    (dict(lr=0.1, momentum=0.9), [0.7195000052452087, -2.1402499675750732, 3.560999870300293]),
    (dict(lr=0.1, momentum=0.9, dampening=0.5, weight_decay=0.01),
     [0.7879496812820435, -2.095630407333374, 3.4033114910125732]),
    (dict(lr=0.1, momentum=0.9, nesterov=True),
     [0.5975499749183655, -2.2012248039245605, 3.8048999309539795]),
])
def test_sgd_matches_warp(kw, expected):
    np.testing.assert_array_equal(_sgd(**kw), np.array(expected, np.float32))


def test_sgd_vec3():
    p = wp.array([[1.0, 2.0, 3.0]], dtype=wp.vec3)
    g = wp.array([[0.1, -0.2, 0.3]], dtype=wp.vec3)
    opt = SGD([p], lr=0.5, momentum=0.5)
    opt.step([g])
    opt.step([g])
    np.testing.assert_array_equal(p.numpy(), np.array([[0.875, 2.25, 2.625]], np.float32))


def _adam(dtype, vals, grads, **kw):
    p = wp.array(vals, dtype=dtype)
    g = wp.array(grads, dtype=dtype)
    opt = Adam([p], **kw)
    for _ in range(3):
        opt.step([g])
    return p.numpy(), opt.m[0].numpy(), opt.v[0].dtype


def test_adam_float32_matches_warp():
    p, m, vd = _adam(float, [1.0, -2.0, 3.0], [0.5, 0.25, -1.0], lr=0.1)
    np.testing.assert_array_equal(p, np.array([0.699999988079071, -2.299999952316284,
                                               3.299999952316284], np.float32))
    np.testing.assert_array_equal(m, np.array([0.13550002872943878, 0.06775001436471939,
                                               -0.27100005745887756], np.float32))
    assert vd is wp.float32
    p, m, _ = _adam(float, [1.0, -2.0], [0.5, 0.0], lr=0.01, betas=(0.5, 0.75), eps=1e-3)
    np.testing.assert_array_equal(p, np.array([0.9700599312782288, -2.0], np.float32))
    np.testing.assert_array_equal(m, np.array([0.4375, 0.0], np.float32))


def test_adam_vec3_and_float16_match_warp():
    p, m, vd = _adam(wp.vec3, [[1.0, 2.0, 3.0]], [[0.1, -0.2, 0.0]], lr=0.1)
    np.testing.assert_array_equal(p, np.array([[0.699999988079071, 2.299999952316284, 3.0]],
                                              np.float32))
    np.testing.assert_array_equal(m, np.array([[0.027100007981061935, -0.05420001596212387,
                                                0.0]], np.float32))
    assert vd is wp.vec3f
    p, m, vd = _adam(wp.float16, [1.0, -2.0], [0.5, 0.25], lr=0.1)
    np.testing.assert_array_equal(p, np.array([0.69970703125, -2.298828125], np.float16))
    np.testing.assert_array_equal(m, np.array([0.13550002872943878, 0.06775001436471939],
                                              np.float32))
    assert vd is wp.float32  # moments of float16 parameters are float32, as Warp


def test_defaults_and_errors():
    o = Adam([wp.zeros(2)])
    assert (o.t, o.lr, o.beta1, o.beta2, o.eps) == (0, 0.001, 0.9, 0.999, 1e-08)
    s = SGD()
    assert (s.lr, s.momentum, s.dampening, s.weight_decay, s.nesterov) == \
        (0.001, 0.0, 0.0, 0.0, False)
    with pytest.raises(ValueError, match=r"SGD gradient shape must match parameter shape "
                       r"\(2,\), got \(3,\)"):
        SGD([wp.zeros(2)]).step([wp.zeros(3)])
    with pytest.raises(RuntimeError, match="SGD parameters must be set before calling step"):
        SGD(None).step([wp.zeros(3)])
    with pytest.raises(RuntimeError, match="Unsupported dtype for Warp Adam optimizer"):
        Adam([wp.zeros(2, dtype=wp.int32)])


def test_reset_and_multidimensional_params():
    p = wp.array(np.ones((2, 2)), dtype=float)
    opt = SGD([p], lr=0.5, momentum=0.9)
    opt.step([wp.array(np.ones((2, 2)), dtype=float)])
    assert p.numpy().tolist() == [[0.5, 0.5], [0.5, 0.5]]  # 1 - 0.5 * 1
    opt.reset_internal_state()
    assert opt.t == 0 and not opt.b[0].numpy().any()


def test_import_through_warp_names():
    import weft.libs.optim
    assert weft.optim.SGD is SGD and weft.optim.Adam is Adam
