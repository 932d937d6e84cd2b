"""Quaternion and transform builtins, written in weft's own kernel language.

These are ordinary generic funcs (untyped parameters, specialised per argument types), so weft
derives their adjoints and tangents exactly as for user code: there are no hand-written rules
to get wrong. Quaternions are ``(x, y, z, w)``; transforms ``(p.x, p.y, p.z, q.x, q.y, q.z,
q.w)``, as in Warp.
"""
import ast

from weft.stdlib import kernel_scope as wp  # names looked up when a kernel is compiled
from weft.core import types as T
from weft.stdlib.funcs import builtin_func, kernel_language_builtins
from weft.stdlib.registry import special_form
from weft.stdlib import ir


def _identity(name, value, kind):
    """``wp.quat_identity(dtype=float32)``, ``wp.transform_identity(dtype=float32)``."""
    def lower(ctx, node):
        given = list(node.args) + [k.value for k in node.keywords if k.arg == "dtype"]
        if len(given) > 1 or any(k.arg != "dtype" for k in node.keywords):
            raise ctx.fail(node, f"wp.{name}() takes one argument, dtype")
        try:
            st = T.as_scalar_type(ctx.resolve(given[0])) if given else T.float32
        except TypeError:
            st = None
        if st is None or not T.is_float(st):
            raise ctx.fail(node, f"wp.{name}(dtype) needs a float type (float16, float32 or "
                           "float64)")
        return ir.Const(value, kind(st))
    return special_form(name, f"{name}(dtype=float32): the identity", host=True)(lower)


quat_identity = _identity("quat_identity", (0.0, 0.0, 0.0, 1.0), T.quaternion)
transform_identity = _identity("transform_identity", (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0),
                               T.transformation)


def _transform_setter(name, attr):
    """Warp's in-place setters ``wp.transform_set_translation(t, p)`` and
    ``transform_set_rotation(t, q)``: the same as ``t.p = p`` / ``t.q = q``."""
    def lower(ctx, node):
        if len(node.args) != 2 or node.keywords:
            raise ctx.fail(node, f"wp.{name}(xform, value) takes two arguments")
        target = node.args[0]
        if not isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)) or (
                isinstance(target, ast.Subscript) and ctx.is_array_expr(target.value)):
            raise ctx.fail(target, f"wp.{name}() modifies a variable in place: pass a variable "
                           "(load an array element into one, or write xforms[i].p = ... "
                           "instead)")
        t = ctx.expr(target)
        if not (T.is_composite(t.type) and t.type._wp_kind_ == "transformation"):
            raise ctx.fail(target, f"wp.{name}() needs a transform, got {T.type_name(t.type)}")
        ctx.assign(target, ctx.with_component(t, attr, ctx.expr(node.args[1]), node), node)
        return None
    def host(xform, value):  # at Python scope: the transform value is changed in place
        if not (isinstance(xform, T.Composite) and xform._wp_kind_ == "transformation"):
            raise TypeError(f"wp.{name}() needs a transform, got {type(xform).__name__}")
        setattr(xform, attr, value)

    return special_form(name, f"{name}(xform, value): xform.{attr} = value, in place",
                        assigned=lambda node: node.args[:1], host=host)(lower)


transform_set_translation = _transform_setter("transform_set_translation", "p")
transform_set_rotation = _transform_setter("transform_set_rotation", "q")


@builtin_func(['quat_from_axis_angle(axis: vec3, angle: Float) -> quat'])
def quat_from_axis_angle(axis, angle):
    half = angle * 0.5
    s = wp.sin(half)
    return wp.quaternion(axis[0] * s, axis[1] * s, axis[2] * s, wp.cos(half))


@builtin_func(['quat_inverse(q: quat) -> quat'])
def quat_inverse(q):
    return wp.quaternion(-q[0], -q[1], -q[2], q[3])


# (the terms summed in Warp's order, so that the rounded results are Warp's bit for bit)
@builtin_func(['quat_rotate(q: quat, x: vec3) -> vec3'])
def quat_rotate(q, x):
    u = wp.vector(q[0], q[1], q[2])
    w = q[3]
    return x * (2.0 * w * w - 1.0) + u * (2.0 * wp.dot(u, x)) + wp.cross(u, x) * (2.0 * w)


@builtin_func(['quat_rotate_inv(q: quat, x: vec3) -> vec3'])
def quat_rotate_inv(q, x):
    u = wp.vector(q[0], q[1], q[2])
    w = q[3]
    return x * (2.0 * w * w - 1.0) + u * (2.0 * wp.dot(u, x)) - wp.cross(u, x) * (2.0 * w)


@builtin_func(['quat_to_matrix(q: quat) -> mat33'])
def quat_to_matrix(q):
    """The rotated axes as columns, as Warp computes it: the same values as the textbook
    1 - 2(y^2 + z^2) form on unit quaternions, and Warp's gradients off the unit sphere."""
    o = type(q[3])(1.0)
    z = type(q[3])(0.0)
    return wp.matrix_from_cols(quat_rotate(q, wp.vector(o, z, z)),
                               quat_rotate(q, wp.vector(z, o, z)),
                               quat_rotate(q, wp.vector(z, z, o)))


@builtin_func(['quat_rpy(roll: Float, pitch: Float, yaw: Float) -> quat'])
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


@builtin_func([
               'quat_to_axis_angle(q: quat, axis: vec3, angle: Float)  (axis, angle are outputs)'], outputs=2)
def quat_to_axis_angle(q):
    """``wp.quat_to_axis_angle(q, axis, angle)`` assigns the rotation's unit axis and angle."""
    return _axis_angle(q)


@builtin_func(['quat_between_vectors(a: vec3, b: vec3) -> quat'])
def quat_between_vectors(a, b):
    """The shortest-arc rotation taking the direction of ``a`` to that of ``b`` (as Warp:
    opposite directions are not handled)."""
    an = wp.normalize(a)
    bn = wp.normalize(b)
    c = wp.cross(an, bn)
    return wp.normalize(wp.quaternion(c[0], c[1], c[2], 1.0 + wp.dot(an, bn)))


@builtin_func(['quat_slerp(q0: quat, q1: quat, t: Float) -> quat'])
def quat_slerp(q0, q1, t):
    """Spherical interpolation from q0 (t = 0) to q1 (t = 1), as Warp."""
    axis, angle = _axis_angle(quat_inverse(q0) * q1)
    return q0 * quat_from_axis_angle(axis, t * angle)


@wp.func
def _from_diagonal(mii, mjj, mkk, sij, ski, dkj):
    """The quaternion of a rotation matrix from its largest diagonal entry ``mii`` (``mjj``,
    ``mkk`` the next in cyclic order; ``sij = m[i, j] + m[j, i]``, ``ski = m[k, i] + m[i, k]``,
    ``dkj = m[k, j] - m[j, k]``): ``(q_i, q_j, q_k, w)``."""
    h = wp.sqrt((mii - (mjj + mkk)) + 1.0)
    qi = 0.5 * h
    h = 0.5 / h
    return qi, sij * h, ski * h, dkj * h


@builtin_func(['quat_from_matrix(m: mat33) -> quat',
               'quat_from_matrix(m: mat44) -> quat  (its upper 3 x 3 block)'])
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
            x, y, z, w = _from_diagonal(m[0, 0], m[1, 1], m[2, 2], m[0, 1] + m[1, 0],
                                        m[2, 0] + m[0, 2], m[2, 1] - m[1, 2])
        elif d == 1:
            y, z, x, w = _from_diagonal(m[1, 1], m[2, 2], m[0, 0], m[1, 2] + m[2, 1],
                                        m[0, 1] + m[1, 0], m[0, 2] - m[2, 0])
        else:
            z, x, y, w = _from_diagonal(m[2, 2], m[0, 0], m[1, 1], m[2, 0] + m[0, 2],
                                        m[1, 2] + m[2, 1], m[1, 0] - m[0, 1])
    return wp.normalize(wp.quaternion(x, y, z, w))


@builtin_func(['transform_get_translation(t: transform) -> vec3'])
def transform_get_translation(t):
    return wp.vector(t[0], t[1], t[2])


@builtin_func(['transform_get_rotation(t: transform) -> quat'])
def transform_get_rotation(t):
    return wp.quaternion(t[3], t[4], t[5], t[6])


@builtin_func(['transform_point(t: transform, p: vec3) -> vec3',
               'transform_point(m: mat44, p: vec3) -> vec3  ((m @ (p, 1)).xyz, as Warp)'])
def transform_point(t, p):
    if t.length == 16:  # a 4 x 4 matrix
        return wp.vector(t[0, 0] * p[0] + t[0, 1] * p[1] + t[0, 2] * p[2] + t[0, 3],
                         t[1, 0] * p[0] + t[1, 1] * p[1] + t[1, 2] * p[2] + t[1, 3],
                         t[2, 0] * p[0] + t[2, 1] * p[1] + t[2, 2] * p[2] + t[2, 3])
    return quat_rotate(transform_get_rotation(t), p) + transform_get_translation(t)


@builtin_func(['transform_vector(t: transform, v: vec3) -> vec3',
               'transform_vector(m: mat44, v: vec3) -> vec3  ((m @ (v, 0)).xyz, as Warp)'])
def transform_vector(t, v):
    if t.length == 16:
        return wp.vector(t[0, 0] * v[0] + t[0, 1] * v[1] + t[0, 2] * v[2],
                         t[1, 0] * v[0] + t[1, 1] * v[1] + t[1, 2] * v[2],
                         t[2, 0] * v[0] + t[2, 1] * v[1] + t[2, 2] * v[2])
    return quat_rotate(transform_get_rotation(t), v)


@builtin_func(['transform_multiply(a: transform, b: transform) -> transform'])
def transform_multiply(a, b):
    qa = transform_get_rotation(a)
    p = quat_rotate(qa, transform_get_translation(b)) + transform_get_translation(a)
    return wp.transformation(p, qa * transform_get_rotation(b))


@builtin_func(['transform_inverse(t: transform) -> transform'])
def transform_inverse(t):
    qi = quat_inverse(transform_get_rotation(t))
    return wp.transformation(-quat_rotate(qi, transform_get_translation(t)), qi)


FUNCS = kernel_language_builtins(globals())
