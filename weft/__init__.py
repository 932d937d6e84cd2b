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
from .core import startup as _startup  # noqa: F401  (first: NumPy and Numba imported, then frozen)
from .core.version import __version__  # noqa: E402,F401
from .core.modpaths import install as _install_module_paths  # noqa: E402

_install_module_paths()  # weft.types, weft.utils, weft.optim, ...: the public module paths
from .runtime.numba_start import drop_dead_globals_when_unoptimised as _drop  # noqa: E402
from .runtime.numba_start import environments_without_imports as _environments  # noqa: E402
from .runtime.numba_start import linking_modules_on_use as _linking  # noqa: E402
from .runtime.numba_start import unique_function_ids as _unique_ids  # noqa: E402
_drop()  # at NUMBA_OPT=0 only: what calls functions stays cacheable
_environments()  # cached code's environments: their modules' imports left to whoever uses them
_linking()  # cached code's bitcode parsed when a compile first links it
_unique_ids()  # no function compiled here shares a symbol with cached code of another process

from .core.errors import InternalError, KernelError, KernelNameError, KernelSyntaxError  # noqa: E402
from .core.errors import KernelTypeError, LaunchError, KernelIndexError, KernelFloatError  # noqa: E402,E501
from .core.errors import KernelAssertionError  # noqa: E402
from .core import config, types  # noqa: E402
from .core.types import (bool, int8, uint8, int16, uint16, int32, uint32, int64, uint64,  # noqa: E402,A004
                         float16, float32, float64, vec2, vec3, vec4, vec2h, vec3h, vec4h, vec2f,
                         vec3f, vec4f, vec2d, vec3d, vec4d, vec2i, vec3i, vec4i, mat22, mat33,
                         mat44, mat22h, mat33h, mat44h, mat22f, mat33f, mat44f, mat22d, mat33d,
                         mat44d, quat, quath, quatf, quatd, transform, transformh, transformf,
                         transformd, spatial_vector, spatial_vectorh, spatial_vectorf,
                         spatial_vectord, spatial_matrix, spatial_matrixh, spatial_matrixf,
                         spatial_matrixd)
from .core.types import vector, matrix, quaternion, transformation  # noqa: E402
globals().update(types.VECTOR_ALIASES)
from .stdlib.funcs import func, func_grad, func_replay, func_tangent, Function  # noqa: E402
from .runtime.kernel import kernel, Kernel  # noqa: E402
from .runtime.array import array, array2d, array3d, array4d  # noqa: E402
from .runtime.array_ops import (zeros, zeros_like, ones, ones_like, full,  # noqa: E402
                                full_like, empty, empty_like, clone, copy, from_numpy)
from .runtime.device import (get_device, set_device, ScopedDevice, synchronize,  # noqa: E402
                             is_cuda_available, get_cuda_device_count, Device)
from .autodiff.forward_mode import jvp  # noqa: E402
from .runtime.launch import launch, launch_tiled  # noqa: E402
from .autodiff.tape import Tape  # noqa: E402
from .runtime.struct import struct  # noqa: E402
from .runtime.geometry import Volume, HashGrid, Mesh, Bvh, is_cubql_available  # noqa: E402
from .runtime.texture import (Texture, Texture1D, Texture2D, Texture3D,  # noqa: E402
                              TextureAddressMode, TextureFilterMode)
from .runtime.geometry_types import (MeshQueryPoint, MeshQueryRay, MeshQueryAABB,  # noqa: E402
                                     MeshQuery, BvhQuery)
from .stdlib.geometry import HASH_GRID_QUERY as HashGridQuery  # noqa: E402
from .stdlib.tiles.queries import BVH_TILED as BvhQueryTiled  # noqa: E402
from .stdlib.tiles.queries import MESH_TILED as MeshQueryAABBTiled  # noqa: E402
from .runtime.matmul import matmul, batched_matmul  # noqa: E402
from .runtime.graph import (Graph, ScopedCapture, capture_begin, capture_end,  # noqa: E402
                            capture_if, capture_launch, capture_pause, capture_while,
                            is_capturing)
from .runtime.command import Launch  # noqa: E402
from .runtime.dlpack import from_dlpack, to_dlpack  # noqa: E402
from .stdlib import namespace as _namespace  # noqa: E402
from .runtime import host as _host  # noqa: E402

_host.install()  # builtins called at Python scope run their generated code


# the Dr.Jit layer: PyTrees, custom differentiable ops, checkpointed loops. wp.grad(tree) is the
# PyTree of gradients; wp.grad(f) of a func or builtin keeps its kernel meaning (weft.tree.grad)
from .autodiff import tree  # noqa: E402,F401
from .autodiff.tree import grad, enable_grad, disable_grad, set_grad, detach  # noqa: E402,F401
from .autodiff.custom import CustomOp, custom  # noqa: E402,F401
from .autodiff.loop import loop  # noqa: E402,F401


def constant(value):
    """Mark a module-level value as a kernel constant (``wp.constant(1.5)``): a number, a
    scalar, vector, matrix, quaternion or transform value, or a struct instance, as Warp."""
    import numbers

    from .core.typecore import Composite, is_struct
    if isinstance(value, (numbers.Number, Composite)) or is_struct(type(value)):
        return value
    raise TypeError(f"Invalid constant type: {type(value)}")


def init():
    """Kept for Warp compatibility: weft needs no initialisation."""


# every name kernels can call: builtins, special forms and kernel-language builtins, declared
# in weft.stdlib (weft.stdlib.namespace collects them)
for _name, _decl in _namespace().items():
    globals().setdefault(_name, _decl)
del _name, _decl
from .stdlib.geometry import HASH_GRID_QUERY as hash_grid_query_t  # noqa: E402,F401


# ---- Warp's Python-scope API (wp.types helpers, arrays, devices, modules, timers, errors) ------
from .core.errors import (WarpCodegenError, WarpCodegenTypeError, WarpCodegenAttributeError,  # noqa: E402,F401
    WarpCodegenIndexError, WarpCodegenKeyError, WarpCodegenValueError, WarpDeterminismError)
from .core.types import bfloat16, dtype_from_numpy, dtype_to_numpy  # noqa: E402,F401
from .core.config import DeterministicMode  # noqa: E402,F401
from .runtime.array import array1d  # noqa: E402,F401
from .runtime.device import get_suggested_block_size, is_conditional_graph_supported  # noqa: E402,F401,E501
from .runtime.device import (get_devices, get_cuda_devices, get_cuda_device,  # noqa: E402,F401
                             get_preferred_device, is_cpu_available, is_device_available,
                             synchronize_device, map_cuda_device, unmap_cuda_device)
from .runtime.modules import (Module, get_module, set_module_options,  # noqa: E402,F401
                              get_module_options, load_module, force_load, clear_kernel_cache)
from .core.timing import ScopedTimer  # noqa: E402,F401
from .core.constants import *  # noqa: E402,F401,F403
from .runtime.declarations import overload, func_native  # noqa: E402,F401
from .core.typeinfo import Int, Float, Scalar  # noqa: E402,F401
from .libs import utils  # noqa: E402,F401

# the layers below learn of this namespace through hooks (it stands above all of them)
import sys as _sys  # noqa: E402
from .core.modpaths import alias_imported as _alias_imported  # noqa: E402
from .core.modpaths import as_warp  # noqa: E402,F401
from .stdlib import func_pickle as _func_pickle  # noqa: E402

# a kernel's scope sends weft's public names by name (wp.sin imported as sin): this namespace's
_func_pickle.PUBLIC = _sys.modules[__name__]
_alias_imported(_sys.modules[__name__])  # weft.types, ...: in sys.modules by these names too


def __getattr__(name):
    """``wp.utils``, ``wp.optim``, ...: the libraries and integrations written on weft's public
    API, imported when first named (they import ``weft``; ``weft`` does not import them)."""
    import importlib

    from .core.modpaths import LAZY_NAMES, PUBLIC
    if name in PUBLIC:
        return importlib.import_module(f"{__name__}.{name}")
    if name in LAZY_NAMES:  # the JAX and PyTorch interop (docs/interop.md)
        value = getattr(importlib.import_module(f"{__name__}.{LAZY_NAMES[name]}"), name)
        globals()[name] = value  # found directly from now on
        return value
    raise AttributeError(f"module 'weft' has no attribute {name!r}")
