"""Decompositions, written in the kernel language: ``wp.svd3(A, U, sigma, V)``,
``wp.qr3(A, Q, R)``, ``wp.eig3(A, Q, d)`` (3x3) and ``wp.svd2(A, U, sigma, V)`` (2x2), Warp's
output-argument builtins.

Primal: Warp 1.19's algorithm (``warp/native/svd.h``, after McAdams et al. and Eric Jang's
svd3), step for step, so that results and conventions are Warp's:

- ``eig3``: cyclic Jacobi sweeps with approximate Givens rotations, accumulated in a quaternion,
  on the *lower triangle* of ``A`` (the upper one is not read); ``Q`` is a rotation
  (det +1) whose columns are the eigenvectors, ``d = diag(Q^T A Q)``, in the order the sweeps
  leave them (not sorted).
- ``svd3``: the eigenvectors ``V`` of ``A^T A`` as above, the columns of ``B = A V`` sorted by
  decreasing norm (a swap negates one column, so ``V`` stays a rotation), then ``B = U R`` by
  three Givens rotations; ``sigma = diag(R)``. ``U`` and ``V`` are rotations, ``|sigma[0]| >=
  |sigma[1]| >= |sigma[2]|``, ``sigma[0], sigma[1] >= 0`` and ``sigma[2]`` has the sign of
  ``det(A)``.
- ``qr3``: the same three Givens rotations: ``Q`` a rotation, ``R`` upper triangular (its
  entries below the diagonal are exactly zero here; Warp leaves rounding residue there) with
  ``R[0, 0], R[1, 1] >= 0``.
- ``svd2``: Warp's closed form, bit for bit in float32 and float64 (but for the two departures
  below): ``sigma^2`` the eigenvalues of ``A^T A``, ``sigma[0] >= sigma[1] >= 0``; ``V`` a
  rotation whose first column ``(c, s)`` has ``c >= s``; ``U``'s first column
  ``A v1 / sigma[0]``, its second one the first turned by +90 degrees times ``sign(det A)``
  (``+1`` at 0), so ``U`` is a reflection where ``det(A) < 0``. As Warp's, the results lose
  accuracy in two places: ``sigma[1] = sqrt((trace - sqrt(disc)) / 2)`` has an absolute error
  of about ``eps * cond(A) * sigma[0]``, up to ``sqrt(eps) * sigma[0]`` next to rank 1, and
  ``V``'s first column cancels where it nears the direction (1, 1) (normal random matrices:
  reconstruction errors up to 2e-4 in float32, 1e-11 in float64). Departures, where Warp's
  result is no SVD at all: where ``A^T A`` is exactly ``s^2 I`` (``A = s Q``: rotations,
  reflections, ``-I``; in float32 most rotations) Warp returns ``U = V = I``, right only for
  ``A = s I``; weft's ``V = I`` and ``U`` as above (``U = A / s = Q``; ``I`` for ``A = 0``).
  Where ``lambda[1]`` rounds negative (near rank 1; 2 in 1e5 random float32 matrices) Warp's
  ``sigma[1]`` is NaN; weft's is ``|det A| / sigma[0]``.

The departure of the 3x3 ones: Warp runs 4 Jacobi sweeps in float32, which leaves about 2% of
random matrices unconverged (reconstruction errors up to 1e-2); weft runs 5 (converged to float32
rounding), and 8 in float64 as Warp (reconstruction ~1e-15 relative).

Derivatives are the analytic ones of the exact decompositions (``func_grad``/``func_tangent``
rules on private tuple-returning funcs, given the decomposition as ``ret``, so that the adjoint
and the tangent use the one the forward computed instead of running the iteration again), not
derivatives of the truncated iteration. Where two
singular values (squared) or eigenvalues coincide to within ``eps * scale`` (``eps`` 1e-6 in
float32, 1e-12 in float64; ``scale`` the largest squared singular value or largest
eigenvalue magnitude), the vectors are not differentiable and their coupling term is dropped
(the gradient stays finite). Warp instead clamps the gap to an absolute 1e-6 or 1e-12
(``adj_svd3``: wrong U, V gradients for matrices of norm ~1e-3 in float32), or to 1e-6 in both
precisions (``adj_eig3``, which divides by an exactly zero gap: NaN for the identity).

- ``svd3``, with dP = U^T dA V: dsigma = diag(dP), dU = U (F o (dP S + S dP^T)),
  dV = V (F o (S dP + dP^T S)), F[i, j] = 1 / (s_j^2 - s_i^2); the adjoint is Warp's
  (PyTorch's) formula. Exact through sigma[2] = 0 (rank 2) and a negative determinant.
- ``svd2``: the same formulas in 2x2 (Warp's ``adj_svd2`` is the same adjoint, with the gap
  clamped as in ``adj_svd3``). ``sigma[1] >= 0`` has a kink where ``det(A)`` changes sign: at
  ``det(A) = 0`` the rules give the derivative from the ``det(A) > 0`` side, as ``U`` does.
- ``qr3``: dQ = Q Omega, dR = Q^T dA - Omega R, Omega antisymmetric from the strictly lower part
  of Q^T dA R^-1, which needs only the leading 2x2 block of R: exact for rank-2 matrices too,
  where Warp's ``inverse(transpose(R))`` is singular.
- ``eig3``: Q depends only on the lower triangle of A (that is all the sweeps read), so the
  gradient of Q's part lands there: exact for the function computed, for any A. Warp's
  ``adj_eig3`` spreads it over the whole matrix; the two agree on symmetric perturbations
  (a matrix built as ``M + wp.transpose(M)``, or the sum of the (i, j) and (j, i) entries).
"""
from weft.stdlib import kernel_scope as wp  # names looked up when a kernel is compiled
from weft.stdlib.funcs import builtin_func, kernel_language_builtins


# ------------------------------------------------------------------------------ precision

@wp.func
def _single(x):
    """True in float32 (1 + 1e-10 rounds to 1), False in float64."""
    one = x - x + 1.0
    return one + 1.0e-10 == one


@wp.func
def _sweeps(x):
    """Jacobi sweeps: 5 in float32 (Warp: 4, not always converged), 8 in float64 (as Warp)."""
    n = 8
    if _single(x):
        n = 5
    return n


@wp.func
def _eps(x):
    """Warp's SVD_EPSILON / QR_GIVENS_EPSILON: 1e-6 in float32, 1e-12 in float64."""
    z = x - x
    return wp.where(_single(x), z + 1.0e-6, z + 1.0e-12)


# ------------------------------------------------------------------------- Jacobi sweeps

@wp.func
def _jacobi_step(s, q):
    """One Jacobi conjugation of the symmetric matrix ``s = (s11, s21, s22, s31, s32, s33)``
    in the (1, 2) plane by an approximate Givens rotation, accumulated into the quaternion
    ``q``; then ``s`` and the vector part of ``q`` are permuted cyclically so that the next
    step works on the next plane (three steps make a sweep and restore the order)."""
    s11 = s[0]
    s21 = s[1]
    s22 = s[2]
    s31 = s[3]
    s32 = s[4]
    s33 = s[5]
    ch = 2.0 * (s11 - s22)
    sh = s21
    exact = 5.82842712474619 * sh * sh < ch * ch  # (3 + sqrt(8)) sh^2 < ch^2
    w = 1.0 / wp.sqrt(ch * ch + sh * sh)
    z = s11 - s11
    ch = wp.where(exact, w * ch, z + 0.9238795325112867)  # else the pi/4 rotation
    sh = wp.where(exact, w * sh, z + 0.3826834323650898)
    scale = ch * ch + sh * sh
    a = (ch * ch - sh * sh) / scale
    b = (2.0 * sh * ch) / scale
    n11 = a * (a * s11 + b * s21) + b * (a * s21 + b * s22)
    n21 = a * (-b * s11 + a * s21) + b * (-b * s21 + a * s22)
    n22 = -b * (-b * s11 + a * s21) + a * (-b * s21 + a * s22)
    n31 = a * s31 + b * s32
    n32 = -b * s31 + a * s32
    t0 = q[0] * sh
    t1 = q[1] * sh
    t2 = q[2] * sh
    shw = sh * q[3]
    qx = q[0] * ch + t1
    qy = q[1] * ch - t0
    qz = q[2] * ch + shw
    qw = q[3] * ch - t2
    return wp.vector(n22, n32, s33, n21, n31, n11), wp.vector(qy, qz, qx, qw)


@wp.func
def _jacobi(s11, s21, s22, s31, s32, s33):
    """The rotation (as a quaternion (x, y, z, w)) diagonalising a symmetric matrix."""
    s = wp.vector(s11, s21, s22, s31, s32, s33)
    z = s11 - s11
    q = wp.vector(z, z, z, z + 1.0)
    for _sweep in range(_sweeps(s11)):
        s, q = _jacobi_step(s, q)
        s, q = _jacobi_step(s, q)
        s, q = _jacobi_step(s, q)
    return wp.quaternion(q[0], q[1], q[2], q[3])


# ------------------------------------------------------------------------------------ QR

@wp.func
def _givens(a1, a2):
    """(cos, sin) of the half angle of the rotation zeroing ``a2`` against the pivot ``a1``."""
    eps = _eps(a1)
    rho = wp.sqrt(a1 * a1 + a2 * a2)
    sh = wp.where(rho > eps, a2, a2 - a2)
    ch = wp.abs(a1) + wp.max(rho, eps)
    if a1 < 0.0:
        t = ch
        ch = sh
        sh = t
    w = 1.0 / wp.sqrt(ch * ch + sh * sh)
    return ch * w, sh * w


@wp.func
def _qr(b):
    """Q (a rotation) and R (upper triangular) with b = Q R, by three Givens rotations."""
    ch1, sh1 = _givens(b[0, 0], b[1, 0])
    a = 1.0 - 2.0 * sh1 * sh1
    c = 2.0 * ch1 * sh1
    r00 = a * b[0, 0] + c * b[1, 0]
    r01 = a * b[0, 1] + c * b[1, 1]
    r02 = a * b[0, 2] + c * b[1, 2]
    r11 = -c * b[0, 1] + a * b[1, 1]
    r12 = -c * b[0, 2] + a * b[1, 2]
    r20 = b[2, 0]
    r21 = b[2, 1]
    r22 = b[2, 2]

    ch2, sh2 = _givens(r00, r20)
    a = 1.0 - 2.0 * sh2 * sh2
    c = 2.0 * ch2 * sh2
    t00 = a * r00 + c * r20
    t01 = a * r01 + c * r21
    t02 = a * r02 + c * r22
    t21 = -c * r01 + a * r21
    t22 = -c * r02 + a * r22

    ch3, sh3 = _givens(r11, t21)
    a = 1.0 - 2.0 * sh3 * sh3
    c = 2.0 * ch3 * sh3
    u11 = a * r11 + c * t21
    u12 = a * r12 + c * t22
    u22 = -c * r12 + a * t22
    z = u11 - u11
    R = wp.matrix(t00, t01, t02, z, u11, u12, z, z, u22, shape=(3, 3))

    s1 = sh1 * sh1
    s2 = sh2 * sh2
    s3 = sh3 * sh3
    m1 = -1.0 + 2.0 * s1
    m2 = -1.0 + 2.0 * s2
    m3 = -1.0 + 2.0 * s3
    Q = wp.matrix(
        m1 * m2,
        4.0 * ch2 * ch3 * m1 * sh2 * sh3 + 2.0 * ch1 * sh1 * m3,
        4.0 * ch1 * ch3 * sh1 * sh3 - 2.0 * ch2 * m1 * sh2 * m3,
        2.0 * ch1 * sh1 * (1.0 - 2.0 * s2),
        -8.0 * ch1 * ch2 * ch3 * sh1 * sh2 * sh3 + m1 * m3,
        -2.0 * ch3 * sh3 + 4.0 * sh1 * (ch3 * sh1 * sh3 + ch1 * ch2 * sh2 * m3),
        2.0 * ch2 * sh2,
        2.0 * ch3 * (1.0 - 2.0 * s2) * sh3,
        m2 * m3, shape=(3, 3))
    return Q, R


# ------------------------------------------------------------------------ decompositions

@wp.func
def _rotation(q):
    """The rotation matrix of the Jacobi sweeps' quaternion in the textbook form Warp's svd.h
    uses (``quatToMat3``), not ``wp.quat_to_matrix`` (the rotated axes): the float32 results
    and gradients then follow Warp's decompositions to the last bits."""
    x = q[0]
    y = q[1]
    z = q[2]
    w = q[3]
    return wp.matrix(1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y),
                     2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x),
                     2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y),
                     shape=(3, 3))


@wp.func
def _svd3(A):
    """(U, sigma, V) as Warp's svd3."""
    # A^T A, summed in Warp's order
    At = wp.transpose(A)
    c0 = At[0]
    c1 = At[1]
    c2 = At[2]
    q = _jacobi(wp.dot(c0, c0), wp.dot(c1, c0), wp.dot(c1, c1), wp.dot(c2, c0),
                wp.dot(c2, c1), wp.dot(c2, c2))
    V = _rotation(q)
    Bt = wp.transpose(A @ V)
    b0 = Bt[0]
    b1 = Bt[1]
    b2 = Bt[2]
    Vt = wp.transpose(V)
    v0 = Vt[0]
    v1 = Vt[1]
    v2 = Vt[2]
    # columns by decreasing norm; a swap negates one column so V stays a rotation
    rho0 = wp.dot(b0, b0)
    rho1 = wp.dot(b1, b1)
    rho2 = wp.dot(b2, b2)
    if rho0 < rho1:
        t = b0
        b0 = b1
        b1 = -t
        t = v0
        v0 = v1
        v1 = -t
        r = rho0
        rho0 = rho1
        rho1 = r
    if rho0 < rho2:
        t = b0
        b0 = b2
        b2 = -t
        t = v0
        v0 = v2
        v2 = -t
        r = rho0
        rho0 = rho2
        rho2 = r
    if rho1 < rho2:
        t = b1
        b1 = b2
        b2 = -t
        t = v1
        v1 = v2
        v2 = -t
    U, R = _qr(wp.matrix_from_cols(b0, b1, b2))
    return U, wp.vector(R[0, 0], R[1, 1], R[2, 2]), wp.matrix_from_cols(v0, v1, v2)


@wp.func
def _eig(A):
    """(Q, d) as Warp's eig3: Jacobi on the lower triangle of A, d = diag(Q^T A Q)."""
    Q = _rotation(_jacobi(A[0, 0], A[1, 0], A[1, 1], A[2, 0], A[2, 1], A[2, 2]))
    D = (wp.transpose(Q) @ A) @ Q
    return Q, wp.vector(D[0, 0], D[1, 1], D[2, 2])


@wp.func
def _svd2(A):
    """(U, sigma, V) as Warp's svd2: the eigenvalues of A^T A in closed form, V's first column
    its leading eigenvector, U's first column A v1 / sigma[0] and its second one completed with
    the sign of det(A). Two departures, where Warp's result is no SVD of A (see the module
    docstring)."""
    a11 = A[0, 0]
    a12 = A[0, 1]
    a21 = A[1, 0]
    a22 = A[1, 1]
    z = a11 - a11
    one = z + 1.0
    t11 = a11 * a11 + a21 * a21  # A^T A
    t12 = a11 * a12 + a21 * a22
    t22 = a12 * a12 + a22 * a22
    trace = t11 + t22
    diff = t11 - t22
    disc = diff * diff + 4.0 * t12 * t12
    det = a11 * a22 - a12 * a21
    det_sign = wp.where(det < 0.0, -one, one)  # Warp's sign(): +1 at 0
    U = wp.matrix(one, z, z, one, shape=(2, 2))
    V = U
    s1 = wp.sqrt(0.5 * trace)
    s2 = s1
    if disc == 0.0:
        # A^T A = s^2 I, A = s Q with Q orthogonal: Warp returns U = I, right only for A = s I
        # (departure: U from V = I as below, so U = Q, which is I for A = s I)
        if s1 > 0.0:
            u11 = a11 / s1
            u21 = a21 / s1
            U = wp.matrix(u11, -u21 * det_sign, u21, u11 * det_sign, shape=(2, 2))
    else:
        root = wp.sqrt(disc)
        inv1 = 1.0 / wp.sqrt((trace + root) * 0.5)
        s1 = 1.0 / inv1
        lambda2 = (trace - root) * 0.5
        # where rounding makes lambda2 negative (near rank 1) Warp returns NaN (departure:
        # |det(A)| / sigma[0])
        s2 = wp.sqrt(wp.max(lambda2, z))
        if lambda2 < 0.0:
            s2 = wp.abs(det) * inv1
        vy = diff - root + 2.0 * t12
        vx = diff + root - 2.0 * t12
        len_sq = vx * vx + vy * vy
        v11 = z + 0.7071067811865476
        v21 = v11
        if len_sq != 0.0:
            w = 1.0 / wp.sqrt(len_sq)
            v11 = vx * w
            v21 = vy * w
        u11 = (a11 * v11 + a12 * v21) * inv1
        u21 = (a21 * v11 + a22 * v21) * inv1
        U = wp.matrix(u11, -u21 * det_sign, u21, u11 * det_sign, shape=(2, 2))
        V = wp.matrix(v11, -v21, v21, v11, shape=(2, 2))
    return U, wp.vector(s1, s2), V


# ----------------------------------------------------------------------- derivative help

@wp.func
def _inv_gaps(x, tol):
    """The antisymmetric F with F[i, j] = 1 / (x[j] - x[i]), zero where |x[j] - x[i]| <= tol
    (coinciding values: the vectors are not differentiable there)."""
    g01 = x[1] - x[0]
    g02 = x[2] - x[0]
    g12 = x[2] - x[1]
    z = g01 - g01
    f01 = wp.where(wp.abs(g01) > tol, 1.0 / g01, z)
    f02 = wp.where(wp.abs(g02) > tol, 1.0 / g02, z)
    f12 = wp.where(wp.abs(g12) > tol, 1.0 / g12, z)
    return wp.matrix(z, f01, f02, -f01, z, f12, -f02, -f12, z, shape=(3, 3))


@wp.func
def _svd_gaps(s):
    """F of the SVD's derivatives, zero where the squared singular values coincide to within
    eps * scale; in 2x2 (svd2): F[0, 1] = 1 / (s[1]^2 - s[0]^2) = -F[1, 0]."""
    if len(s) == 2:
        a = s[0] * s[0]
        b = s[1] * s[1]
        g = b - a
        z = g - g
        apart = wp.abs(g) > _eps(s[0]) * wp.max(a, b)
        f = wp.where(apart, 1.0 / wp.where(apart, g, z + 1.0), z)
        return wp.matrix(z, f, -f, z, shape=(2, 2))
    s2 = wp.cw_mul(s, s)
    return _inv_gaps(s2, _eps(s[0]) * wp.max(s2[0], wp.max(s2[1], s2[2])))


@wp.func
def _safe_div(a, b):
    return wp.where(b != 0.0, a / b, b - b)


@wp.func
def _upper(m):
    z = m[0, 0] - m[0, 0]
    return wp.matrix(m[0, 0], m[0, 1], m[0, 2], z, m[1, 1], m[1, 2], z, z, m[2, 2], shape=(3, 3))


@wp.func
def _lower_sym(m):
    """The symmetric matrix eig3 reads from m: its lower triangle mirrored."""
    return wp.matrix(m[0, 0], m[1, 0], m[2, 0], m[1, 0], m[1, 1], m[2, 1],
                     m[2, 0], m[2, 1], m[2, 2], shape=(3, 3))


@wp.func
def _eig_frame(A, Q):
    """F of the eigenvalues of what the sweeps saw, and C = Q^T sym(A) Q."""
    Qt = wp.transpose(Q)
    e = wp.get_diag((Qt @ _lower_sym(A)) @ Q)
    tol = _eps(e[0]) * wp.max(wp.abs(e[0]), wp.max(wp.abs(e[1]), wp.abs(e[2])))
    C = (Qt @ ((A + wp.transpose(A)) * 0.5)) @ Q
    return _inv_gaps(e, tol), C


# ------------------------------------------------------------------ rules: SVD (dP = U^T dA V)

@wp.func
def _svd_jvp(U, s, V, F, dA):
    """Tangents (dU, dsigma, dV) of A = U diag(s) V^T along dA (any size; F: the gaps)."""
    S = wp.diag(s)
    dP = (wp.transpose(U) @ dA) @ V
    dPt = wp.transpose(dP)
    dU = U @ wp.cw_mul(F, dP @ S + S @ dPt)
    dV = V @ wp.cw_mul(F, S @ dP + dPt @ S)
    return dU, wp.get_diag(dP), dV


@wp.func
def _svd_vjp(U, s, V, F, gU, gs, gV):
    """The adjoint of A from those of U, sigma and V (any size; F: the gaps)."""
    S = wp.diag(s)
    Ut = wp.transpose(U)
    Vt = wp.transpose(V)
    KU = wp.cw_mul(F, Ut @ gU - wp.transpose(gU) @ U)
    KV = wp.cw_mul(F, Vt @ gV - wp.transpose(gV) @ V)
    return (U @ (wp.diag(gs) + KU @ S + S @ KV)) @ Vt


@wp.func
def _svd(A):
    """``_svd3`` or ``_svd2`` by the size of A: the derivative rules below serve both."""
    if len(A) == 2:
        return _svd2(A)
    return _svd3(A)


@wp.func_tangent(_svd)
def _svd_tangent(A, ret, dA):
    U, s, V = ret
    return _svd_jvp(U, s, V, _svd_gaps(s), dA)


@wp.func_grad(_svd)
def _svd_grad(A, ret, adj_ret):
    U, s, V = ret
    gU, gs, gV = adj_ret
    wp.adjoint[A] += _svd_vjp(U, s, V, _svd_gaps(s), gU, gs, gV)


# --------------------------------------- rules: QR (Omega = Q^T dQ from the leading 2x2 of R)

@wp.func_tangent(_qr)
def _qr_tangent(A, ret, dA):
    Q, R = ret
    C = wp.transpose(Q) @ dA  # = X R with X = Q^T dA R^-1; only X's strict lower part is needed
    l10 = _safe_div(C[1, 0], R[0, 0])
    l20 = _safe_div(C[2, 0], R[0, 0])
    l21 = _safe_div(C[2, 1] - l20 * R[0, 1], R[1, 1])
    z = l10 - l10
    Om = wp.matrix(z, -l10, -l20, l10, z, -l21, l20, l21, z, shape=(3, 3))
    return Q @ Om, _upper(C - Om @ R)


@wp.func_grad(_qr)
def _qr_grad(A, ret, adj_ret):
    Q, R = ret
    gQ, gR = adj_ret
    gRu = _upper(gR)  # R's lower triangle is structurally zero
    W = wp.transpose(Q) @ gQ - gRu @ wp.transpose(R)
    y10 = W[1, 0] - W[0, 1]
    y20 = W[2, 0] - W[0, 2]
    y21 = W[2, 1] - W[1, 2]
    z21 = _safe_div(y21, R[1, 1])
    z = y10 - y10
    Z = wp.matrix(z, z, z, _safe_div(y10, R[0, 0]), z, z,
                  _safe_div(y20 - z21 * R[0, 1], R[0, 0]), z21, z, shape=(3, 3))
    wp.adjoint[A] += Q @ (gRu + Z)


# --------------------------------------------------- rules: eigen (Omega = F o (Q^T dS Q))

@wp.func_tangent(_eig)
def _eig_tangent(A, ret, dA):
    Q, d = ret
    F, C = _eig_frame(A, Q)
    Qt = wp.transpose(Q)
    Om = wp.cw_mul(F, (Qt @ _lower_sym(dA)) @ Q)
    return Q @ Om, wp.get_diag((Qt @ dA) @ Q) + 2.0 * wp.get_diag(C @ Om)


@wp.func_grad(_eig)
def _eig_grad(A, ret, adj_ret):
    Q, d = ret
    gQ, gd = adj_ret
    F, C = _eig_frame(A, Q)
    Qt = wp.transpose(Q)
    D = wp.diag(gd)
    G = (Q @ wp.cw_mul(F, Qt @ gQ + 2.0 * (C @ D))) @ Qt
    z = G[0, 0] - G[0, 0]
    # Q depends on the lower triangle only: fold G onto it
    fold = wp.matrix(G[0, 0], z, z, G[1, 0] + G[0, 1], G[1, 1], z,
                     G[2, 0] + G[0, 2], G[2, 1] + G[1, 2], G[2, 2], shape=(3, 3))
    wp.adjoint[A] += (Q @ D) @ Qt + fold


# ---------------------------------------------------------------------------- the builtins

@builtin_func([
               'svd3(A: mat33, U: mat33, sigma: vec3, V: mat33)  (U, sigma, V are outputs)'], outputs=3)
def svd3(A):
    """``wp.svd3(A, U, sigma, V)``: A = U diag(sigma) V^T (Warp's conventions, see above)."""
    return _svd(A)


@builtin_func([
               'svd2(A: mat22, U: mat22, sigma: vec2, V: mat22)  (U, sigma, V are outputs)'], outputs=3)
def svd2(A):
    """``wp.svd2(A, U, sigma, V)``: A = U diag(sigma) V^T for 2x2 A (Warp's conventions)."""
    return _svd(A)


@builtin_func(['qr3(A: mat33, Q: mat33, R: mat33)  (Q, R are outputs)'], outputs=2)
def qr3(A):
    """``wp.qr3(A, Q, R)``: A = Q R, Q a rotation, R upper triangular."""
    return _qr(A)


@builtin_func(['eig3(A: mat33, Q: mat33, d: vec3)  (Q, d are outputs)'], outputs=2)
def eig3(A):
    """``wp.eig3(A, Q, d)``: A = Q diag(d) Q^T for symmetric A (lower triangle read)."""
    return _eig(A)


FUNCS = kernel_language_builtins(globals())
