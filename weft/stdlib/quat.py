"""Quaternion and transform builtins, written in weft's own kernel language.

These are ordinary generic funcs (untyped parameters, specialised per argument types), so weft
derives their adjoints and tangents exactly as for user code: there are no hand-written rules
to get wrong. Quaternions are ``(x, y, z, w)``; transforms ``(p.x, p.y, p.z, q.x, q.y, q.z,
q.w)``, as in Warp.
"""
import weft as wp  # resolved when a kernel using these is compiled, not at import
from weft.stdlib.registry import kernel_language_builtins
from weft.runtime.kernel import func_with_outputs


@wp.func
def quat_identity():
    return wp.quat(0.0, 0.0, 0.0, 1.0)


@wp.func
def quat_from_axis_angle(axis, angle):
    half = angle * 0.5
    s = wp.sin(half)
    return wp.quaternion(axis[0] * s, axis[1] * s, axis[2] * s, wp.cos(half))


@wp.func
def quat_inverse(q):
    return wp.quaternion(-q[0], -q[1], -q[2], q[3])


@wp.func
def quat_rotate(q, x):
    u = wp.vector(q[0], q[1], q[2])
    w = q[3]
    return x * (2.0 * w * w - 1.0) + wp.cross(u, x) * (2.0 * w) + u * (2.0 * wp.dot(u, x))


@wp.func
def quat_rotate_inv(q, x):
    u = wp.vector(q[0], q[1], q[2])
    w = q[3]
    return x * (2.0 * w * w - 1.0) - wp.cross(u, x) * (2.0 * w) + u * (2.0 * wp.dot(u, x))


@wp.func
def quat_to_matrix(q):
    x = q[0]
    y = q[1]
    z = q[2]
    w = q[3]
    return wp.matrix(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - z * w), 2.0 * (x * z + y * w),
                     2.0 * (x * y + z * w), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - x * w),
                     2.0 * (x * z - y * w), 2.0 * (y * z + x * w), 1.0 - 2.0 * (x * x + y * y),
                     shape=(3, 3))


@wp.func
def quat_rpy(roll, pitch, yaw):
    """The quaternion of roll, pitch and yaw angles (Warp's convention)."""
    cy = wp.cos(yaw * 0.5)
    sy = wp.sin(yaw * 0.5)
    cr = wp.cos(roll * 0.5)
    sr = wp.sin(roll * 0.5)
    cp = wp.cos(pitch * 0.5)
    sp = wp.sin(pitch * 0.5)
    return wp.quaternion(cy * sr * cp - sy * cr * sp, cy * cr * sp + sy * sr * cp,
                         sy * cr * cp - cy * sr * sp, cy * cr * cp + sy * sr * sp)


@wp.func
def _axis_angle(q):
    v = wp.vector(q[0], q[1], q[2])
    axis = wp.normalize(v)
    if q[3] < 0.0 * q[3]:
        axis = -axis
    return axis, 2.0 * wp.atan2(wp.length(v), wp.abs(q[3]))


@func_with_outputs(2)
def quat_to_axis_angle(q):
    """``wp.quat_to_axis_angle(q, axis, angle)`` assigns the rotation's unit axis and angle."""
    return _axis_angle(q)


@wp.func
def quat_between_vectors(a, b):
    """The shortest-arc rotation taking the direction of ``a`` to that of ``b`` (as Warp:
    opposite directions are not handled)."""
    an = wp.normalize(a)
    bn = wp.normalize(b)
    c = wp.cross(an, bn)
    return wp.normalize(wp.quaternion(c[0], c[1], c[2], 1.0 + wp.dot(an, bn)))


@wp.func
def quat_slerp(q0, q1, t):
    """Spherical interpolation from q0 (t = 0) to q1 (t = 1), as Warp."""
    axis, angle = _axis_angle(quat_inverse(q0) * q1)
    return q0 * quat_from_axis_angle(axis, t * angle)


@wp.func
def quat_from_matrix(m):
    """The rotation quaternion of a 3x3 rotation matrix (Warp's branch on the trace)."""
    z0 = m[0, 0] * 0.0
    x = z0
    y = z0
    z = z0
    w = z0
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr >= z0:
        h = wp.sqrt(tr + 1.0)
        w = 0.5 * h
        h = 0.5 / h
        x = (m[2, 1] - m[1, 2]) * h
        y = (m[0, 2] - m[2, 0]) * h
        z = (m[1, 0] - m[0, 1]) * h
    else:
        d = 0
        if m[1, 1] > m[0, 0]:
            d = 1
        if m[2, 2] > m[d, d]:
            d = 2
        if d == 0:
            h = wp.sqrt((m[0, 0] - (m[1, 1] + m[2, 2])) + 1.0)
            x = 0.5 * h
            h = 0.5 / h
            y = (m[0, 1] + m[1, 0]) * h
            z = (m[2, 0] + m[0, 2]) * h
            w = (m[2, 1] - m[1, 2]) * h
        elif d == 1:
            h = wp.sqrt((m[1, 1] - (m[2, 2] + m[0, 0])) + 1.0)
            y = 0.5 * h
            h = 0.5 / h
            z = (m[1, 2] + m[2, 1]) * h
            x = (m[0, 1] + m[1, 0]) * h
            w = (m[0, 2] - m[2, 0]) * h
        else:
            h = wp.sqrt((m[2, 2] - (m[0, 0] + m[1, 1])) + 1.0)
            z = 0.5 * h
            h = 0.5 / h
            x = (m[2, 0] + m[0, 2]) * h
            y = (m[1, 2] + m[2, 1]) * h
            w = (m[1, 0] - m[0, 1]) * h
    return wp.normalize(wp.quaternion(x, y, z, w))


@wp.func
def transform_get_translation(t):
    return wp.vector(t[0], t[1], t[2])


@wp.func
def transform_get_rotation(t):
    return wp.quaternion(t[3], t[4], t[5], t[6])


@wp.func
def transform_point(t, p):
    return quat_rotate(transform_get_rotation(t), p) + transform_get_translation(t)


@wp.func
def transform_vector(t, v):
    return quat_rotate(transform_get_rotation(t), v)


@wp.func
def transform_multiply(a, b):
    qa = transform_get_rotation(a)
    p = quat_rotate(qa, transform_get_translation(b)) + transform_get_translation(a)
    return wp.transformation(p, qa * transform_get_rotation(b))


@wp.func
def transform_inverse(t):
    qi = quat_inverse(transform_get_rotation(t))
    return wp.transformation(-quat_rotate(qi, transform_get_translation(t)), qi)


@wp.func
def transform_identity():
    return wp.transform(wp.vec3(0.0, 0.0, 0.0), wp.quat(0.0, 0.0, 0.0, 1.0))


FUNCS = kernel_language_builtins(globals())
