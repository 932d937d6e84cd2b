"""Generalized winding numbers of a mesh (Warp 1.19's ``support_winding_number=True`` and
``mesh_query_point_sign_winding_number``), after Barill et al. 2018 as adapted in Warp's
``solid_angle.h``: every BVH node stores a far-field expansion of its triangles' solid angle
(dipole, and second- and third-order terms about the area-weighted centroid); a query sums the
expansions of nodes far enough away (``|q - P|^2 > max_p_dist_sq * accuracy^2``) and exact
solid angles of the triangles of the other leaves.

``props`` float32 (N, 36), one row per BVH node (in the BVH's node order), Warp's
``SolidAngleProps`` field by field::

    0-2 average_p   3-5 normal (area-weighted)   6-8 n_ij_diag   9-11 n_ijk_diag
    12 sum_permute_n_xyz   13-18 two_n_xxy_n_yxx, two_n_xxz_n_zxx, two_n_yyz_n_zyy,
    two_n_yyx_n_xyy, two_n_zzx_n_xzz, two_n_zzy_n_yzz   19-24 n_xy, n_yx, n_yz, n_zy, n_zx, n_xz
    25-30 box lower, upper   31-33 area_P   34 area   35 max_p_dist_sq

Built bottom-up in float32 with Warp's formulas and order (a leaf's triangles combined one by
one in leaf order, a node's children left then right); the evaluation walks the tree left
child first with three local stacks, as Warp's ``solid_angle_iterative``, so the sums are
Warp's.
"""
import math

import numba
import numpy as np
from numba import prange

from ...core.diskcache import njit

from . import stackmem as _stackmem
from .mesh_geom import F0, F1, dot3, solid_angle  # noqa: F401

stackmem = _stackmem.PYTHON   # rebound per target by mesh_query.compile_for
PROPS = 36
FOUR_PI_INV = 0.07957747154
_JIT = dict(cache=True, nogil=True, error_model="numpy")


# ------------------------------------------------------------------------------ host build
@njit(**_JIT)
def _integrals(a, b, c, P, i, want_j, want_k):
    """Warp's ``compute_integrals`` (a, b, c sorted along axis i): (ii, ij, ik)."""
    f32 = np.float32
    oab = b - a
    oac = c - a
    ocb = b - c
    t = oab[i] / oac[i]
    j = 0 if i == 2 else i + 1
    k = 0 if j == 2 else j + 1
    jdiff = t * oac[j] - oab[j]
    kdiff = t * oac[k] - oab[k]
    ca = np.empty(3, np.float32)
    cc = np.empty(3, np.float32)
    ca[0] = jdiff * oab[k] - kdiff * oab[j]
    ca[1] = kdiff * oab[i]
    ca[2] = jdiff * oab[i]
    cc[0] = jdiff * ocb[k] - kdiff * ocb[j]
    cc[1] = kdiff * ocb[i]
    cc[2] = jdiff * ocb[i]
    sa = f32(math.sqrt(ca[0] * ca[0] + ca[1] * ca[1] + ca[2] * ca[2]))
    sc = f32(math.sqrt(cc[0] * cc[0] + cc[1] * cc[1] + cc[2] * cc[2]))
    pai = a[i] - P[i]
    pci = c[i] - P[i]
    third = f32(1.0) / f32(3.0)
    two3 = f32(2.0) / f32(3.0)
    h = f32(0.5)
    q = f32(0.25)
    ii = sa * (h * pai * pai + two3 * pai * oab[i] + q * oab[i] * oab[i]) + \
        sc * (h * pci * pci + two3 * pci * ocb[i] + q * ocb[i] * ocb[i])
    out = np.zeros(2, np.float32)
    for m in range(2):
        jk = j if m == 0 else k
        diff = jdiff if m == 0 else kdiff
        if (m == 0 and want_j) or (m == 1 and want_k):
            obmid = b[jk] + h * diff
            oabmid = obmid - a[jk]
            ocbmid = obmid - c[jk]
            paj = a[jk] - P[jk]
            pcj = c[jk] - P[jk]
            out[m] = sa * (h * pai * paj + third * pai * oabmid + third * paj * oab[i] +
                           q * oab[i] * oabmid) + \
                sc * (h * pci * pcj + third * pci * ocbmid + third * pcj * ocb[i] +
                      q * ocb[i] * ocbmid)
    return ii, out[0], out[1]


@njit(**_JIT)
def _order(vals, axis):
    """Warp's three-comparison sort of the vertex indices along ``axis``."""
    o = np.array([0, 1, 2])
    if vals[0, axis] > vals[1, axis]:
        o[0], o[1] = o[1], o[0]
    if vals[o[0], axis] > vals[2, axis]:
        o[0], o[2] = o[2], o[0]
    if vals[o[1], axis] > vals[o[2], axis]:
        o[1], o[2] = o[2], o[1]
    return o


@njit(**_JIT)
def triangle_props(a, b, c, out):
    """Warp's ``precompute_triangle_solid_angle_props`` into ``out`` (36 floats)."""
    f32 = np.float32
    ab = b - a
    ac = c - a
    N = np.empty(3, np.float32)
    N[0] = f32(0.5) * (ab[1] * ac[2] - ab[2] * ac[1])
    N[1] = f32(0.5) * (ab[2] * ac[0] - ab[0] * ac[2])
    N[2] = f32(0.5) * (ab[0] * ac[1] - ab[1] * ac[0])
    area = f32(math.sqrt(N[0] * N[0] + N[1] * N[1] + N[2] * N[2]))
    P = (a + b + c) / f32(3.0)
    out[:] = 0
    for k in range(3):
        out[25 + k] = min(a[k], b[k], c[k])
        out[28 + k] = max(a[k], b[k], c[k])
        out[k] = P[k]
        out[31 + k] = P[k] * area
        out[3 + k] = N[k]
    out[34] = area
    if area == 0:
        return
    n = N / area
    vals = np.empty((3, 3), np.float32)
    vals[0] = a
    vals[1] = b
    vals[2] = c
    ox = _order(vals, 0)
    oy = _order(vals, 1)
    oz = _order(vals, 2)
    dx = vals[ox[2], 0] - vals[ox[0], 0]
    dy = vals[oy[2], 1] - vals[oy[0], 1]
    dz = vals[oz[2], 2] - vals[oz[0], 2]
    ixx = ixy = iyy = iyz = izz = izx = f32(0.0)
    if dx > 0:
        ixx, r1, r2 = _integrals(vals[ox[0]], vals[ox[1]], vals[ox[2]], P, 0,
                                 dx >= dy and dy > 0, dx >= dz and dz > 0)
        if dx >= dy and dy > 0:
            ixy = r1
        if dx >= dz and dz > 0:
            izx = r2
    if dy > 0:
        iyy, r1, r2 = _integrals(vals[oy[0]], vals[oy[1]], vals[oy[2]], P, 1,
                                 dy >= dz and dz > 0, dx < dy and dx > 0)
        if dy >= dz and dz > 0:
            iyz = r1
        if dx < dy and dx > 0:
            ixy = r2
    if dz > 0:
        izz, r1, r2 = _integrals(vals[oz[0]], vals[oz[1]], vals[oz[2]], P, 2,
                                 dx < dz and dx > 0, dy < dz and dy > 0)
        if dx < dz and dx > 0:
            izx = r1
        if dy < dz and dy > 0:
            iyz = r2
    two = f32(2.0)
    out[9] = ixx * n[0]
    out[10] = iyy * n[1]
    out[11] = izz * n[2]
    out[12] = two * (n[0] * iyz + n[1] * izx + n[2] * ixy)
    out[13] = two * (n[0] * ixy) + n[1] * ixx
    out[14] = two * (n[0] * izx) + n[2] * ixx
    out[15] = two * (n[1] * iyz) + n[2] * iyy
    out[16] = two * (n[1] * ixy) + n[0] * iyy
    out[17] = two * (n[2] * izx) + n[0] * izz
    out[18] = two * (n[2] * iyz) + n[1] * izz


@njit(inline="always", **_JIT)
def _mixed(p, q):
    """The column of the mixed moment ``n_pq`` (p != q): xy 19, yx 20, yz 21, zy 22, zx 23,
    xz 24."""
    return 19 + 2 * p if q == (p + 1) % 3 else 20 + 2 * q


@njit(**_JIT)
def combine_props(L, R, out):
    """Warp's ``combine_precomputed_solid_angle_props`` of a left and a right child."""
    f32 = np.float32
    two = f32(2.0)
    res = np.zeros(PROPS, np.float32)
    for k in range(3):
        res[3 + k] = L[3 + k] + R[3 + k]
        res[31 + k] = L[31 + k] + R[31 + k]
        res[25 + k] = R[25 + k] if R[25 + k] < L[25 + k] else L[25 + k]
        res[28 + k] = R[28 + k] if R[28 + k] > L[28 + k] else L[28 + k]
    res[34] = L[34] + R[34]
    for k in range(3):
        if res[34] > 0:
            res[k] = res[31 + k] / res[34]
        else:
            res[k] = f32(0.5) * (res[25 + k] + res[28 + k])
    for k in range(6, 19):
        res[k] = L[k] + R[k]
    for side in range(2):
        ch = L if side == 0 else R
        d = np.empty(3, np.float32)
        for k in range(3):
            d[k] = ch[k] - res[k]
        N = ch[3:6]
        for k in range(3):
            res[6 + k] += N[k] * d[k]
        nxy = ch[19] + N[0] * d[1]
        nyx = ch[20] + N[1] * d[0]
        nyz = ch[21] + N[1] * d[2]
        nzy = ch[22] + N[2] * d[1]
        nzx = ch[23] + N[2] * d[0]
        nxz = ch[24] + N[0] * d[2]
        res[19] += nxy
        res[20] += nyx
        res[21] += nyz
        res[22] += nzy
        res[23] += nzx
        res[24] += nxz
        for k in range(3):
            res[9 + k] += two * (d[k] * ch[6 + k]) + d[k] * (d[k] * N[k])
        res[12] += d[0] * (nyz + nzy) + d[1] * (nzx + nxz) + d[2] * (nxy + nyx)
        for q in range(6):   # res[13 + q]: the mixed terms (a, b) = xy, xz, yz, yx, zx, zy
            a = q // 2
            b = (a + 1 + q % 2) % 3
            res[13 + q] += two * (d[b] * ch[6 + a] + d[a] * ch[_mixed(a, b)] +
                                  N[a] * d[a] * d[b]) + \
                two * ch[_mixed(b, a)] * d[a] + N[b] * d[a] * d[a]
    m = f32(0.0)
    for k in range(3):
        lo = res[k] - res[25 + k]
        hi = res[28 + k] - res[k]
        e = lo if lo >= hi else hi
        m += e * e
    res[35] = m
    out[:] = res


@njit(parallel=True, **_JIT)
def build_props(links, tris, props):
    """All nodes' expansions: leaves in parallel, then internal nodes children first."""
    n = links.shape[0]
    for p in prange(n):
        first = links[p, 0]
        if first >= 0:
            tmp = np.empty(PROPS, np.float32)
            for k in range(first, links[p, 1]):
                dst = props[p] if k == first else tmp
                triangle_props(tris[k, 0:3].copy(), tris[k, 3:6].copy(), tris[k, 6:9].copy(),
                               dst)
                if k != first:
                    combine_props(props[p].copy(), tmp, props[p])
    for p in range(n - 1, -1, -1):
        if links[p, 0] < 0:
            combine_props(props[links[p, 1]], props[p + 1], props[p])


# ------------------------------------------------------------------------------ queries
def node_solid_angle(props, node, px, py, pz, accuracy_sq):
    """Warp's ``evaluate_node_solid_angle``: ``(descend, approximation)``."""
    qx = px - props[node, 0]
    qy = py - props[node, 1]
    qz = pz - props[node, 2]
    ql2 = qx * qx + qy * qy + qz * qz
    if ql2 <= props[node, 35] * accuracy_sq:
        return True, F0
    qm2 = F1 / ql2
    qm1 = np.float32(math.sqrt(qm2))
    qx = qx * qm1
    qy = qy * qm1
    qz = qz * qm1
    om = -qm2 * dot3(qx, qy, qz, props[node, 3], props[node, 4], props[node, 5])
    q2x = qx * qx
    q2y = qy * qy
    q2z = qz * qz
    qm3 = qm2 * qm1
    d0 = props[node, 6]
    d1 = props[node, 7]
    d2 = props[node, 8]
    om1 = qm3 * (d0 + d1 + d2 - np.float32(3.0) * (
        dot3(q2x, q2y, q2z, d0, d1, d2) + qx * qy * (props[node, 19] + props[node, 20]) +
        qx * qz * (props[node, 23] + props[node, 24]) +
        qy * qz * (props[node, 21] + props[node, 22])))
    om = om + om1
    qm4 = qm2 * qm2
    t0x = props[node, 16] + props[node, 17]
    t0y = props[node, 18] + props[node, 13]
    t0z = props[node, 14] + props[node, 15]
    t1x = qy * props[node, 13] + qz * props[node, 14]
    t1y = qz * props[node, 15] + qx * props[node, 16]
    t1z = qx * props[node, 17] + qy * props[node, 18]
    three = np.float32(3.0)
    om2 = qm4 * (np.float32(1.5) * dot3(qx, qy, qz, three * props[node, 9] + t0x,
                                        three * props[node, 10] + t0y,
                                        three * props[node, 11] + t0z) -
                 np.float32(7.5) * (dot3(q2x * qx, q2y * qy, q2z * qz, props[node, 9],
                                         props[node, 10], props[node, 11]) +
                                    qx * qy * qz * props[node, 12] +
                                    dot3(q2x, q2y, q2z, t1x, t1y, t1z)))
    om = om + om2
    if not math.isfinite(om):
        return True, F0
    return False, om


def mesh_winding_number(links, tris, props, px, py, pz, accuracy):
    """``wp.mesh_query_winding_number``-style value at p: Warp's ``solid_angle_iterative``
    (left child first, partial sums per level) divided by 4 pi."""
    if links.shape[0] == 0:
        return F0
    px = np.float32(px)
    py = np.float32(py)
    pz = np.float32(pz)
    acc = np.float32(accuracy)
    acc2 = acc * acc
    stack = stackmem.local.array(64, np.int32)
    at = stackmem.local.array(64, np.int32)
    angle = stackmem.local.array(64, np.float32)
    stack[0] = 0
    at[0] = 0
    angle[0] = F0
    count = 1
    while count > 0:
        top = count - 1
        node = stack[top]
        first = links[node, 0]
        if first >= 0:
            s = F0
            for k in range(first, links[node, 1]):
                s += solid_angle(tris[k, 0], tris[k, 1], tris[k, 2], tris[k, 3], tris[k, 4],
                                 tris[k, 5], tris[k, 6], tris[k, 7], tris[k, 8], px, py, pz)
            angle[top] = s
            count -= 1
        elif at[top] == 0:
            descend, a = node_solid_angle(props, node, px, py, pz, acc2)
            angle[top] = a
            if descend:
                stack[count] = links[node, 1]
                at[top] = 1
                angle[count] = F0
                at[count] = 0
                count += 1
            else:
                count -= 1
        elif at[top] == 1:
            angle[top] += angle[count]
            stack[count] = node + 1
            at[top] = 2
            angle[count] = F0
            at[count] = 0
            count += 1
        else:
            angle[top] += angle[count]
            count -= 1
    return np.float32(np.float64(angle[0]) * FOUR_PI_INV)


PORTABLE = ("node_solid_angle", "mesh_winding_number")
