"""Norms, Euler angles, swing-twist and rigid-transform helpers (Warp's ``warp.math`` group),
written in weft's kernel language: weft derives their adjoints and tangents.

Conventions as Warp 1.19: quaternions ``(x, y, z, w)``; spatial vectors ``(angular,
linear)``; Euler angles are rotations about the fixed axes ``i``, ``j``, ``k`` applied in that
order, indexed by axis (``e[0]`` about X); 4 x 4 matrices hold ``R`` (scaled per column by the
scale) beside the translation in the last column.
"""
from weft.stdlib.funcs import builtin_func, kernel_language_builtins
from weft.stdlib import kernel_scope as wp


# ----------------------------------------------------------------------------- norms

@builtin_func(['norm_l1(v: vec) -> Float'])
def norm_l1(v):
    """Sum of the absolute values of the components."""
    n = wp.abs(v[0])
    for i in range(1, len(v)):
        n += wp.abs(v[i])
    return n


@builtin_func(['norm_l2(v: vec) -> Float'])
def norm_l2(v):
    """Euclidean length."""
    return wp.length(v)


@builtin_func(['norm_huber(v: vec[, delta: Float]) -> Float'])
def norm_huber(v, delta=1.0):
    """Huber norm: half the squared length inside ``delta``, linear growth outside."""
    sq = wp.dot(v, v)
    if sq <= delta * delta:
        return 0.5 * sq
    return delta * (wp.sqrt(sq) - 0.5 * delta)


@builtin_func(['norm_pseudo_huber(v: vec[, delta: Float]) -> Float'])
def norm_pseudo_huber(v, delta=1.0):
    """Smooth Huber norm ``delta * sqrt(1 + |v|^2 / delta^2)``."""
    return delta * wp.sqrt(1.0 + wp.dot(v, v) / (delta * delta))


@builtin_func(['smooth_normalize(v: vec[, delta: Float]) -> vec'])
def smooth_normalize(v, delta=1.0):
    """``v`` divided by its pseudo-Huber norm (no singularity at zero)."""
    return v / norm_pseudo_huber(v, delta)


# ----------------------------------------------------------------------------- rotations

@builtin_func(['velocity_at_point(qd: vec6, r: vec3) -> vec3'])
def velocity_at_point(qd, r):
    """Linear velocity of the point at offset ``r`` of a frame moving with twist ``qd``."""
    return wp.spatial_bottom(qd) + wp.cross(wp.spatial_top(qd), r)


@builtin_func(['quat_twist(axis: vec3, q: quat) -> quat'])
def quat_twist(axis, q):
    """The twist about unit ``axis`` of the swing-twist decomposition of ``q``."""
    along = wp.dot(wp.vector(q[0], q[1], q[2]), axis) * axis
    return wp.normalize(wp.quaternion(along[0], along[1], along[2], q[3]))


@builtin_func(['quat_twist_angle(axis: vec3, q: quat) -> Float'])
def quat_twist_angle(axis, q):
    """Unsigned angle of the twist of ``q`` about unit ``axis``."""
    return 2.0 * wp.atan2(wp.abs(wp.dot(axis, wp.vector(q[0], q[1], q[2]))), q[3])


@builtin_func(['quat_twist_angle_signed(axis: vec3, q: quat) -> Float'])
def quat_twist_angle_signed(axis, q):
    """Signed (right-hand rule about ``axis``) angle of the twist of ``q``."""
    return 2.0 * wp.atan2(wp.dot(axis, wp.vector(q[0], q[1], q[2])), q[3])


@builtin_func(['quat_to_rpy(q: quat) -> vec3'])
def quat_to_rpy(q):
    """(roll, pitch, yaw) of unit ``q``: the inverse of ``quat_rpy``."""
    x = q[0]
    y = q[1]
    z = q[2]
    w = q[3]
    roll = wp.atan2(2.0 * (w * x + y * z), 1.0 - 2.0 * (x * x + y * y))
    pitch = wp.asin(wp.clamp(2.0 * (w * y - z * x), -1.0, 1.0))
    yaw = wp.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    return wp.vector(roll, pitch, yaw)


@wp.func
def _component(v, a):
    """Component ``a`` (0, 1, 2) of ``v``, ``a`` a runtime integer."""
    r = v[2]
    if a == 0:
        r = v[0]
    elif a == 1:
        r = v[1]
    return r


@wp.func
def _about(a, angle):
    """The rotation by ``angle`` about coordinate axis ``a`` (0, 1, 2)."""
    s = wp.sin(0.5 * angle)
    c = wp.cos(0.5 * angle)
    z = 0.0 * s
    q = wp.quaternion(z, z, s, c)
    if a == 0:
        q = wp.quaternion(s, z, z, c)
    elif a == 1:
        q = wp.quaternion(z, s, z, c)
    return q


@builtin_func(['quat_from_euler(e: vec3, i: Int, j: Int, k: Int) -> quat'])
def quat_from_euler(e, i, j, k):
    """Rotation by ``e[i]`` about axis ``i``, then ``e[j]`` about ``j``, then ``e[k]`` about
    ``k``, all about the fixed axes."""
    ei = _component(e, i)
    ej = _component(e, j)
    ek = _component(e, k)
    return _about(k, ek) * _about(j, ej) * _about(i, ei)


@builtin_func(['quat_to_euler(q: quat, i: Int, j: Int, k: Int) -> vec3'])
def quat_to_euler(q, i, j, k):
    """Euler angles of ``q`` for the axis sequence ``i, j, k`` (fixed axes), indexed by axis;
    for proper sequences (``i == k``) the third angle is stored at the remaining axis.

    The direct method of Bernardes and Viollet (PLOS ONE, 2022): the second angle from the
    squared norms of two quaternion pairs, the others from two half-angle arctangents."""
    proper = i == k
    kk = k
    if proper:
        kk = 3 - i - j
    odd = (i - j) * (j - kk) * (kk - i) < 0  # (i, j, kk) an odd permutation of (0, 1, 2)
    w = q[3]
    qi = _component(q, i)
    qj = _component(q, j)
    qk = _component(q, kk)
    if odd:
        qk = -qk
    a = w
    b = qi
    c = qj
    d = qk
    if not proper:
        a = w - qj
        b = qi + qk
        c = qj + w
        d = qk - qi
    ab = a * a + b * b
    t2 = wp.acos(2.0 * ab / (ab + c * c + d * d) - 1.0)
    plus = wp.atan2(b, a)
    minus = wp.atan2(d, c)
    t1 = 0.0 * t2
    t3 = plus + minus
    if wp.abs(t2) < 1.0e-6:
        t3 = 2.0 * plus
    elif wp.abs(t2 - wp.pi) < 1.0e-6:
        t3 = 2.0 * minus
    else:
        t1 = plus - minus
    if not proper:
        t2 = t2 - wp.HALF_PI
        if odd:
            t3 = -t3
    out = wp.vector(t1, t1, t1)
    out = _put(out, j, t2)
    out = _put(out, kk, t3)
    return out


@wp.func
def _put(v, a, x):
    """``v`` with component ``a`` (a runtime integer) replaced by ``x``."""
    r = wp.vector(v[0], v[1], x)
    if a == 0:
        r = wp.vector(x, v[1], v[2])
    elif a == 1:
        r = wp.vector(v[0], x, v[2])
    return r


# ----------------------------------------------------------------------------- edges
@wp.func
def _fma(a, b, c):
    """``a*b + c`` rounded once for float32 (evaluated in float64, as the geometry cores'
    portable ``fmaf``); plain float64 arithmetic for float64."""
    return type(a)(wp.float64(a) * wp.float64(b) + wp.float64(c))


@wp.func
def _diff_product(a, b, c, d):
    """``a*b - c*d`` by Kahan's FMA trick, as Warp's ``diff_product``."""
    cd = c * d
    return _fma(a, b, -cd) + _fma(-c, d, cd)


@builtin_func(['closest_point_edge_edge(p1: vec3, q1: vec3, p2: vec3, q2: vec3, '
               'epsilon: Float) -> vec3'])
def closest_point_edge_edge(p1, q1, p2, q2, epsilon):
    """``(s, t, d)``: the closest points ``p1 + s (q1 - p1)`` and ``p2 + t (q2 - p2)`` of two
    segments and their distance; a segment of squared length <= ``epsilon`` is a point
    (Warp's algorithm, the geometry core's ``closest_point_edge_edge``)."""
    d1 = q1 - p1
    d2 = q2 - p2
    r = p1 - p2
    a = wp.dot(d1, d1)
    e = wp.dot(d2, d2)
    f = wp.dot(d2, r)
    zero = 0.0 * a
    s = zero
    t = zero
    if a <= epsilon:
        if e > epsilon:
            t = wp.clamp(f / e, zero, zero + 1.0)
    elif e <= epsilon:
        s = wp.clamp(-wp.dot(d1, r) / a, zero, zero + 1.0)
    else:
        c = wp.dot(d1, r)
        b = wp.dot(d1, d2)
        denom = _diff_product(a, e, b, b)
        s0 = zero
        if denom > zero:
            s0 = wp.clamp(_diff_product(b, f, c, e) / denom, zero, zero + 1.0)
        t0 = (b * s0 + f) / e
        if t0 < zero:
            s = wp.clamp(-c / a, zero, zero + 1.0)
        elif t0 > zero + 1.0:
            s = wp.clamp((b - c) / a, zero, zero + 1.0)
            t = zero + 1.0
        else:
            s = s0
            t = t0
    return wp.vector(s, t, wp.length((p2 + t * d2) - (p1 + s * d1)))


# ----------------------------------------------------------------------------- transforms

@wp.func
def _spatial(top, bottom):
    """The spatial vector (top, bottom) of the vectors' own precision."""
    return wp.vector(top[0], top[1], top[2], bottom[0], bottom[1], bottom[2])


@wp.func
def _moved(t, a, b):
    """``(R a, R b + p x R a)`` for ``t = (R, p)``: a twist ``(w, v)`` moved by ``t`` (and a
    wrench, its halves swapped)."""
    q = wp.transform_get_rotation(t)
    ra = wp.quat_rotate(q, a)
    return ra, wp.quat_rotate(q, b) + wp.cross(wp.transform_get_translation(t), ra)


@builtin_func(['transform_twist(t: transform, x: vec6) -> vec6'])
def transform_twist(t, x):
    """Twist ``(w, v)`` mapped by ``t = (R, p)``: ``(R w, R v + p x R w)``."""
    w, v = _moved(t, wp.spatial_top(x), wp.spatial_bottom(x))
    return _spatial(w, v)


@builtin_func(['transform_wrench(t: transform, x: vec6) -> vec6'])
def transform_wrench(t, x):
    """Wrench ``(tau, f)`` mapped by ``t = (R, p)``: ``(R tau + p x R f, R f)``."""
    f, tau = _moved(t, wp.spatial_bottom(x), wp.spatial_top(x))
    return _spatial(tau, f)


@builtin_func(['transform_compose(position: vec3, rotation: quat, scale: vec3) -> mat44'])
def transform_compose(position, rotation, scale):
    """The 4 x 4 matrix of a translation, a rotation and a per-axis scale."""
    r = wp.quat_to_matrix(rotation)
    one = 1.0 + 0.0 * position[0]
    zero = 0.0 * one
    return wp.matrix(scale[0] * r[0, 0], scale[1] * r[0, 1], scale[2] * r[0, 2], position[0],
                     scale[0] * r[1, 0], scale[1] * r[1, 1], scale[2] * r[1, 2], position[1],
                     scale[0] * r[2, 0], scale[1] * r[2, 1], scale[2] * r[2, 2], position[2],
                     zero, zero, zero, one, shape=(4, 4))


@builtin_func(['transform_to_matrix(xform: transform) -> mat44'])
def transform_to_matrix(xform):
    """The 4 x 4 matrix of a rigid transform."""
    p = wp.transform_get_translation(xform)
    one = 1.0 + 0.0 * p[0]
    return transform_compose(p, wp.transform_get_rotation(xform), wp.vector(one, one, one))


@builtin_func(['transform_from_matrix(mat: mat44) -> transform'])
def transform_from_matrix(mat):
    """The rigid transform of a 4 x 4 matrix (its rotation part read by ``quat_from_matrix``)."""
    return wp.transformation(wp.vector(mat[0, 3], mat[1, 3], mat[2, 3]),
                             wp.quat_from_matrix(mat))


@wp.func
def _unscaled(col):
    """A column of the rotation block, divided by its length, and the length (the column left
    as it is when the length is zero)."""
    n = wp.length(col)
    if n != 0.0 * n:
        col = col / n
    return col, n


@builtin_func(['transform_decompose(m: mat44) -> (vec3, quat, vec3)'])
def transform_decompose(m):
    """``(position, rotation, scale)`` of a matrix made by ``transform_compose``."""
    c0, sx = _unscaled(wp.vector(m[0, 0], m[1, 0], m[2, 0]))
    c1, sy = _unscaled(wp.vector(m[0, 1], m[1, 1], m[2, 1]))
    c2, sz = _unscaled(wp.vector(m[0, 2], m[1, 2], m[2, 2]))
    r = wp.matrix(c0[0], c1[0], c2[0], c0[1], c1[1], c2[1], c0[2], c1[2], c2[2], shape=(3, 3))
    return (wp.vector(m[0, 3], m[1, 3], m[2, 3]), wp.quat_from_matrix(r),
            wp.vector(sx, sy, sz))


FUNCS = kernel_language_builtins(globals())
