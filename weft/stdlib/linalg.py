"""Matrix builtins in the kernel language: weft differentiates them like user funcs.

Sizes are chosen with compile-time ``if len(m) == n`` tests, which keep only the branch taken.
"""
from weft.stdlib import kernel_scope as wp  # names looked up when a kernel is compiled
from weft.core import types as T
from weft.stdlib.funcs import builtin_func, kernel_language_builtins
from weft.stdlib.registry import special_form
from weft.stdlib import ir


@builtin_func(['trace(m: matN) -> Float  (any scalar type)'])
def trace(m):
    t = m[0, 0] + m[1, 1]
    if len(m) > 2:
        t = t + m[2, 2]
    if len(m) > 3:
        t = t + m[3, 3]
    if len(m) > 4:
        for i in range(4, len(m)):
            t = t + m[i, i]
    return t


@builtin_func(['get_diag(m: matN) -> vec'])
def get_diag(m):
    if len(m) == 2:
        return wp.vector(m[0, 0], m[1, 1])
    if len(m) == 3:
        return wp.vector(m[0, 0], m[1, 1], m[2, 2])
    if len(m) == 4:
        return wp.vector(m[0, 0], m[1, 1], m[2, 2], m[3, 3])
    r = m[0]  # any other size (Warp's matrices go beyond 4)
    for i in range(len(m)):
        r[i] = m[i, i]
    return r


@builtin_func(['diag(d: vec) -> matN'])
def diag(d):
    z = d[0] * 0.0
    if len(d) == 2:
        return wp.matrix(d[0], z, z, d[1], shape=(2, 2))
    if len(d) == 3:
        return wp.matrix(d[0], z, z, z, d[1], z, z, z, d[2], shape=(3, 3))
    if len(d) == 4:
        return wp.matrix(d[0], z, z, z, z, d[1], z, z, z, z, d[2], z, z, z, z, d[3],
                         shape=(4, 4))
    r = wp.outer(d, d) * z  # any other size
    for i in range(len(d)):
        r[i, i] = d[i]
    return r


@builtin_func(['ddot(a: mat, b: mat) -> Float  (same shape; any scalar type)'])
def ddot(a, b):
    """Double contraction sum_ij a_ij b_ij."""
    s = wp.dot(a[0], b[0]) + wp.dot(a[1], b[1])
    if len(a) > 2:
        s = s + wp.dot(a[2], b[2])
    if len(a) > 3:
        s = s + wp.dot(a[3], b[3])
    if len(a) > 4:  # larger matrices (mat66 of spatial code)
        for i in range(4, len(a)):
            s = s + wp.dot(a[i], b[i])
    return s


@builtin_func(['skew(v: vec3) -> mat33'])
def skew(v):
    """The cross-product matrix: skew(v) * x == cross(v, x)."""
    z = v[0] * 0.0
    return wp.matrix(z, -v[2], v[1], v[2], z, -v[0], -v[1], v[0], z, shape=(3, 3))


@wp.func
def _sub2(m):
    """The 2x2 minors of a 4x4 matrix's top two rows (s) and bottom two rows (c)."""
    s0 = m[0, 0] * m[1, 1] - m[1, 0] * m[0, 1]
    s1 = m[0, 0] * m[1, 2] - m[1, 0] * m[0, 2]
    s2 = m[0, 0] * m[1, 3] - m[1, 0] * m[0, 3]
    s3 = m[0, 1] * m[1, 2] - m[1, 1] * m[0, 2]
    s4 = m[0, 1] * m[1, 3] - m[1, 1] * m[0, 3]
    s5 = m[0, 2] * m[1, 3] - m[1, 2] * m[0, 3]
    c5 = m[2, 2] * m[3, 3] - m[3, 2] * m[2, 3]
    c4 = m[2, 1] * m[3, 3] - m[3, 1] * m[2, 3]
    c3 = m[2, 1] * m[3, 2] - m[3, 1] * m[2, 2]
    c2 = m[2, 0] * m[3, 3] - m[3, 0] * m[2, 3]
    c1 = m[2, 0] * m[3, 2] - m[3, 0] * m[2, 2]
    c0 = m[2, 0] * m[3, 1] - m[3, 0] * m[2, 1]
    return wp.vector(s0, s1, s2, s3, s4, s5), wp.vector(c0, c1, c2, c3, c4, c5)


@builtin_func([
               'determinant(m: mat22) -> Float',
               'determinant(m: mat33) -> Float',
               'determinant(m: mat44) -> Float'])
def determinant(m):
    if len(m) == 2:
        return m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]
    if len(m) == 3:
        return (m[0, 0] * (m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1])
                - m[0, 1] * (m[1, 0] * m[2, 2] - m[1, 2] * m[2, 0])
                + m[0, 2] * (m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0]))
    s, c = _sub2(m)
    return s[0] * c[5] - s[1] * c[4] + s[2] * c[3] + s[3] * c[2] - s[4] * c[1] + s[5] * c[0]


@builtin_func([
               'inverse(m: mat22) -> mat22',
               'inverse(m: mat33) -> mat33',
               'inverse(m: mat44) -> mat44'])
def inverse(m):
    """The inverse of a 2x2, 3x3 or 4x4 matrix (zero where the determinant is zero, as Warp)."""
    d = determinant(m)
    r = wp.where(d != 0.0 * d, 1.0 / d, 0.0 * d)
    if len(m) == 2:
        return wp.matrix(m[1, 1], -m[0, 1], -m[1, 0], m[0, 0], shape=(2, 2)) * r
    if len(m) == 3:
        return wp.matrix(m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1],
                         m[0, 2] * m[2, 1] - m[0, 1] * m[2, 2],
                         m[0, 1] * m[1, 2] - m[0, 2] * m[1, 1],
                         m[1, 2] * m[2, 0] - m[1, 0] * m[2, 2],
                         m[0, 0] * m[2, 2] - m[0, 2] * m[2, 0],
                         m[0, 2] * m[1, 0] - m[0, 0] * m[1, 2],
                         m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0],
                         m[0, 1] * m[2, 0] - m[0, 0] * m[2, 1],
                         m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0], shape=(3, 3)) * r
    s, c = _sub2(m)
    return wp.matrix(
        m[1, 1] * c[5] - m[1, 2] * c[4] + m[1, 3] * c[3],
        -m[0, 1] * c[5] + m[0, 2] * c[4] - m[0, 3] * c[3],
        m[3, 1] * s[5] - m[3, 2] * s[4] + m[3, 3] * s[3],
        -m[2, 1] * s[5] + m[2, 2] * s[4] - m[2, 3] * s[3],
        -m[1, 0] * c[5] + m[1, 2] * c[2] - m[1, 3] * c[1],
        m[0, 0] * c[5] - m[0, 2] * c[2] + m[0, 3] * c[1],
        -m[3, 0] * s[5] + m[3, 2] * s[2] - m[3, 3] * s[1],
        m[2, 0] * s[5] - m[2, 2] * s[2] + m[2, 3] * s[1],
        m[1, 0] * c[4] - m[1, 1] * c[2] + m[1, 3] * c[0],
        -m[0, 0] * c[4] + m[0, 1] * c[2] - m[0, 3] * c[0],
        m[3, 0] * s[4] - m[3, 1] * s[2] + m[3, 3] * s[0],
        -m[2, 0] * s[4] + m[2, 1] * s[2] - m[2, 3] * s[0],
        -m[1, 0] * c[3] + m[1, 1] * c[1] - m[1, 2] * c[0],
        m[0, 0] * c[3] - m[0, 1] * c[1] + m[0, 2] * c[0],
        -m[3, 0] * s[3] + m[3, 1] * s[1] - m[3, 2] * s[0],
        m[2, 0] * s[3] - m[2, 1] * s[1] + m[2, 2] * s[0], shape=(4, 4)) * r


@builtin_func(['cw_div(a: vec, b: vec) -> vec  (same length; any scalar type)',
               'cw_div(a: mat, b: mat) -> mat  (same shape; any scalar type)'])
def cw_div(a, b):
    if a.length != len(a):  # a matrix (of more than one column): row by row
        r = a
        for i in range(len(a)):
            r[i] = cw_div(a[i], b[i])
        return r
    if len(a) == 2:
        return wp.vector(a[0] / b[0], a[1] / b[1])
    if len(a) == 3:
        return wp.vector(a[0] / b[0], a[1] / b[1], a[2] / b[2])
    if len(a) == 4:
        return wp.vector(a[0] / b[0], a[1] / b[1], a[2] / b[2], a[3] / b[3])
    r = a
    for i in range(len(a)):  # any other length (Warp's vectors go beyond 4)
        r[i] = a[i] / b[i]
    return r


def _from_vectors(name, by_rows):
    """``wp.matrix_from_rows(r0, r1, ...)`` / ``matrix_from_cols(c0, c1, ...)``: a matrix of
    any number of vectors of one type (Warp's variadic forms)."""
    def lower(ctx, node):
        if not node.args or node.keywords:
            raise ctx.fail(node, f"wp.{name}() takes the vectors, positionally")
        vs = [ctx.expr(a) for a in node.args]
        t = vs[0].type
        if not T.is_vector(t) or any(v.type != t for v in vs):
            raise ctx.fail(node, f"wp.{name}() takes vectors of one type, got "
                           f"{', '.join(T.type_name(v.type) for v in vs)}")
        n, k = t._length_, len(vs)
        comps = [ctx.apply("extract", [v, ir.Const(i, T.int32)], node) for v in vs
                 for i in range(n)]
        if not by_rows:  # the vectors are columns: transpose the order of the components
            comps = [comps[j * n + i] for i in range(n) for j in range(k)]
        shape = (k, n) if by_rows else (n, k)
        return ctx.apply("construct", comps, node, {"type": T.matrix(shape, T.scalar_of(t))})
    return special_form(name, f"{name}(v0, v1, ...): the matrix whose "
                        f"{'rows' if by_rows else 'columns'} are the vectors", host=True)(lower)


matrix_from_rows = _from_vectors("matrix_from_rows", True)
matrix_from_cols = _from_vectors("matrix_from_cols", False)


# --- spatial vectors (6 components: top = angular, bottom = linear, as Warp) ----------------

@builtin_func(['spatial_top(a: vec6) -> vec3'])
def spatial_top(a):
    return wp.vector(a[0], a[1], a[2])


@builtin_func(['spatial_bottom(a: vec6) -> vec3'])
def spatial_bottom(a):
    return wp.vector(a[3], a[4], a[5])


@builtin_func(['spatial_dot(a: vec6, b: vec6) -> Float'])
def spatial_dot(a, b):
    return wp.dot(spatial_top(a), spatial_top(b)) + wp.dot(spatial_bottom(a), spatial_bottom(b))


@builtin_func(['spatial_cross(a: vec6, b: vec6) -> vec6'])
def spatial_cross(a, b):
    w = wp.cross(spatial_top(a), spatial_top(b))
    v = wp.cross(spatial_top(a), spatial_bottom(b)) + wp.cross(spatial_bottom(a), spatial_top(b))
    return wp.vector(w[0], w[1], w[2], v[0], v[1], v[2])


@builtin_func(['spatial_cross_dual(a: vec6, b: vec6) -> vec6'])
def spatial_cross_dual(a, b):
    w = wp.cross(spatial_top(a), spatial_top(b)) + wp.cross(spatial_bottom(a), spatial_bottom(b))
    v = wp.cross(spatial_top(a), spatial_bottom(b))
    return wp.vector(w[0], w[1], w[2], v[0], v[1], v[2])


@builtin_func(['spatial_adjoint(r: mat33, s: mat33) -> mat66'])
def spatial_adjoint(r, s):
    """The 6x6 spatial matrix [[r, 0], [s, r]] (Warp's block layout): with r = R and
    s = skew(p) R for a transform (R, p), it maps the twist (w, v) to (R w, p x R w + R v)."""
    return wp.matrix(r[0, 0], r[0, 1], r[0, 2], 0.0, 0.0, 0.0,
                     r[1, 0], r[1, 1], r[1, 2], 0.0, 0.0, 0.0,
                     r[2, 0], r[2, 1], r[2, 2], 0.0, 0.0, 0.0,
                     s[0, 0], s[0, 1], s[0, 2], r[0, 0], r[0, 1], r[0, 2],
                     s[1, 0], s[1, 1], s[1, 2], r[1, 0], r[1, 1], r[1, 2],
                     s[2, 0], s[2, 1], s[2, 2], r[2, 0], r[2, 1], r[2, 2], shape=(6, 6))


FUNCS = kernel_language_builtins(globals())
