"""Kernel-language operators that Python-scope values apply through :mod:`weft.runtime.host`
(``q1 * q2`` of quaternions at Python scope is the kernel's quaternion product, as in Warp)."""


def mul(a, b):
    return a * b
