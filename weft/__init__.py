"""weft: Warp kernels compiled to Numba, with exact reverse and forward mode gradients.

``import weft as wp`` in place of ``import warp as wp``::

    import numpy as np
    import weft as wp

    @wp.kernel
    def scale(a: wp.array(dtype=float), s: float, out: wp.array(dtype=float)):
        i = wp.tid()
        out[i] = a[i] * s

    a = wp.array(np.arange(4.0), dtype=float, requires_grad=True)
    out = wp.zeros(4, dtype=float, requires_grad=True)
    wp.launch(scale, dim=4, inputs=[a, 2.0], outputs=[out])
"""
__version__ = "0.1.0"

from .errors import InternalError, KernelError, KernelNameError, KernelSyntaxError  # noqa: E402
from .errors import KernelTypeError, LaunchError  # noqa: E402
from . import config, types  # noqa: E402
from .types import (bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64,  # noqa: E402,A004
                    float16, float32, float64, vec2, vec3, vec4, vec2h, vec3h, vec4h, vec2f,
                    vec3f, vec4f, vec2d, vec3d, vec4d, vec2i, vec3i, vec4i, mat22, mat33, mat44,
                    mat22h, mat33h, mat44h, mat22f, mat33f, mat44f, mat22d, mat33d, mat44d,
                    quat, quath, quatf, quatd, transform, transformh, transformf, transformd,
                    spatial_vector, spatial_vectorh, spatial_vectorf, spatial_vectord,
                    spatial_matrix, spatial_matrixh, spatial_matrixf, spatial_matrixd)
from .types import vector, matrix, quaternion, transformation  # noqa: E402
globals().update(types.VECTOR_ALIASES)
from .stdlib import registry as _registry  # noqa: E402
from .transpiler.lower_expr import SpecialForm as _SpecialForm  # noqa: E402
from .runtime.kernel import kernel, func, func_grad, func_replay, func_tangent  # noqa: E402
from .runtime.kernel import Kernel, Function  # noqa: E402
from .runtime.array import (array, array2d, array3d, array4d, zeros, zeros_like,  # noqa: E402
                            ones, ones_like, full, full_like, empty, empty_like, clone, copy,
                            from_numpy)
from .runtime.device import (get_device, set_device, ScopedDevice, synchronize,  # noqa: E402
                             is_cuda_available, get_cuda_device_count, Device)
from .runtime.launch import launch, jvp  # noqa: E402
from .runtime.tape import Tape  # noqa: E402
from .runtime.struct import struct  # noqa: E402

tid = _SpecialForm("tid", "The launch index of the calling thread (in kernels only).")
atomic_add = _SpecialForm("atomic_add", "atomic_add(array, index..., value) -> old value")
atomic_sub = _SpecialForm("atomic_sub", "atomic_sub(array, index..., value) -> old value")
atomic_min = _SpecialForm("atomic_min", "atomic_min(array, index..., value) -> old value")
atomic_max = _SpecialForm("atomic_max", "atomic_max(array, index..., value) -> old value")
atomic_exch = _SpecialForm("atomic_exch", "atomic_exch(array, index..., value) -> old value")
atomic_cas = _SpecialForm("atomic_cas", "atomic_cas(array, index..., compare, value) -> old "
                          "value; stores value where the element equals compare (integers)")
randf = _SpecialForm("randf", "randf(state[, lo, hi]) -> float32 (advances state)")
randi = _SpecialForm("randi", "randi(state[, lo, hi]) -> int32 (advances state)")
randu = _SpecialForm("randu", "randu(state) -> uint32 (advances state)")
randn = _SpecialForm("randn", "randn(state) -> float32, normal (advances state twice)")
sample_unit_sphere_surface = _SpecialForm("sample_unit_sphere_surface", "-> vec3 on the sphere")
sample_unit_sphere = _SpecialForm("sample_unit_sphere", "-> vec3 in the unit ball")
sample_unit_disk = _SpecialForm("sample_unit_disk", "-> vec2 in the unit disk")
sample_unit_ring = _SpecialForm("sample_unit_ring", "-> vec2 on the unit circle")
sample_triangle = _SpecialForm("sample_triangle", "-> barycentric vec2")
sample_unit_square = _SpecialForm("sample_unit_square", "-> vec2 in [-0.5, 0.5)^2")
sample_unit_cube = _SpecialForm("sample_unit_cube", "-> vec3 in [-0.5, 0.5)^3")
sample_unit_hemisphere_surface = _SpecialForm("sample_unit_hemisphere_surface",
                                              "-> vec3 on the unit sphere, z >= 0")
sample_unit_hemisphere = _SpecialForm("sample_unit_hemisphere", "-> vec3 in the unit ball, z >= 0")
sample_cdf = _SpecialForm("sample_cdf", "sample_cdf(state, cdf: array(dtype=float32)) -> int: the "
                          "first index with cdf[index] >= randf(state) (advances state)")
poisson = _SpecialForm("poisson", "poisson(state, lam: float32) -> uint32 (advances state, "
                       "unless lam == 0)")
transform_set_translation = _SpecialForm("transform_set_translation", "transform_set_translation("
                                         "xform, p): xform.p = p, in place")
transform_set_rotation = _SpecialForm("transform_set_rotation", "transform_set_rotation(xform, q):"
                                      " xform.q = q, in place")
atomic_and = _SpecialForm("atomic_and", "atomic_and(array, index..., value) -> old value "
                          "(int32/uint32/int64/uint64 arrays)")
atomic_or = _SpecialForm("atomic_or", "atomic_or(array, index..., value) -> old value")
atomic_xor = _SpecialForm("atomic_xor", "atomic_xor(array, index..., value) -> old value")
alloc_local = _SpecialForm("alloc_local", "alloc_local(dtype, size, value=0): a per-thread "
                           "buffer read and written with computed indices (as Dr.Jit's)")
adjoint = _SpecialForm("adjoint", "wp.adjoint[x]: the adjoint of input x, in func_grad rules")


def constant(value):
    """Mark a module-level value as a kernel constant (``wp.constant(1.5)``)."""
    return value


def init():
    """Kept for Warp compatibility: weft needs no initialisation."""


for _name, _b in _registry.NAMESPACE.items():
    globals().setdefault(_name, _b)
from .stdlib import decomp as _decomp, interp as _interp, linalg as _linalg, noise as _noise, quat as _quat  # noqa: E402,E501

for _module in (_quat, _interp, _linalg, _noise, _decomp):  # builtins in the kernel language
    globals().update(_module.FUNCS)
del _name, _b


# ---- Warp's Python-scope API (wp.types helpers, arrays, devices, modules, timers, errors) ------
from .errors import (WarpCodegenError, WarpCodegenTypeError,  # noqa: E402,F401
                     WarpCodegenAttributeError, WarpCodegenIndexError, WarpCodegenKeyError,
                     WarpCodegenValueError, WarpDeterminismError)
from .types import bfloat16, dtype_from_numpy, dtype_to_numpy  # noqa: E402,F401
from .config import DeterministicMode  # noqa: E402,F401
from .runtime.array import array1d  # noqa: E402,F401
from .runtime.device import (get_devices, get_cuda_devices, get_cuda_device,  # noqa: E402,F401
                             get_preferred_device, is_cpu_available, is_device_available,
                             synchronize_device, map_cuda_device, unmap_cuda_device)
from .runtime.modules import (Module, get_module, set_module_options,  # noqa: E402,F401
                              get_module_options, load_module, force_load, clear_kernel_cache)
from .timing import ScopedTimer  # noqa: E402,F401
from .constants import *  # noqa: E402,F401,F403
from .runtime.kernel_compat import Kernel  # noqa: E402,F401,F811
from .runtime.declarations import overload, func_native  # noqa: E402,F401
from .typeinfo import Int, Float, Scalar  # noqa: E402,F401
from . import utils  # noqa: E402,F401
