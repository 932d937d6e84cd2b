"""``wp.HashGrid``, ``wp.Mesh`` and ``wp.Bvh`` (``wp.Volume`` is in :mod:`weft.runtime.volume`):
the host objects of :mod:`weft.native.geometry` with Warp's Python API, and the ``id`` kernels take (:mod:`weft.native.geometry.descriptors`)::

    volume = wp.Volume.load_from_nvdb(open("sphere.nvdb", "rb"))
    grid = wp.HashGrid(128, 128, 128)
    grid.build(points, radius)                 # points: wp.array(dtype=wp.vec3)
    wp.launch(k, n, inputs=[volume.id, grid.id, points])

The objects live on the CPU (weft's CUDA kernels read them through the same descriptors once
their arrays are on the device; see docs/geometry.md).
"""
from __future__ import annotations

import weakref
from contextlib import contextmanager
from operator import attrgetter

import numpy as np

from ..native.geometry import descriptors as D
from ..native.geometry import hashgrid as _hashgrid
from .array import array
from .geometry_common import _cpu_only, _release
from .volume import Volume  # noqa: F401  (wp.Volume's home is weft.runtime.volume)


def is_cubql_available():
    """Warp's ``wp.is_cubql_available()``: whether the cuBQL BVH builder is available; weft
    has none (its trees are Warp's SAH and median ones), so always False."""
    return False


def _is_cubql(constructor):
    key = getattr(constructor, "name", constructor)
    if isinstance(key, str):
        return key.lower() == "cubql"
    return isinstance(key, (int, np.integer)) and not isinstance(key, bool) and int(key) == -1


def _no_cubql_rebuild(constructor, what, new):
    """Warp's refusal to rebuild a BVH built otherwise with cuBQL (weft has no cuBQL)."""
    if _is_cubql(constructor):
        raise ValueError(f"Cannot rebuild a non-cuBQL {what} with constructor='cubql'; create "
                         f"a new {new} instead")


def _check_groups(groups, n, what):
    """Warp's checks of a ``groups`` array (int32, contiguous, one id per item)."""
    if groups is None:
        return
    data = groups._data if isinstance(groups, array) else np.asarray(groups)
    if data.dtype != np.int32 or not data.flags.c_contiguous or data.ndim != 1:
        raise RuntimeError("groups should be a contiguous array of type wp.int32")
    if data.shape[0] != n:
        raise RuntimeError(f"groups must have the same length as {what}")


def _refuse_cubql(kind, groups, extra=None):
    """Warp's errors for the cuBQL constructor: first what it never supports (groups, winding
    numbers), then (weft has no cuBQL) the failed build."""
    if groups is not None:
        raise RuntimeError("Grouped BVHs are not supported with constructor='cubql'"
                           if kind == "BVH" else
                           "Grouped mesh queries are not supported with bvh_constructor='cubql'")
    if extra:
        raise RuntimeError(extra)
    raise RuntimeError(f"Failed to create {kind}: the cuBQL constructor is not available "
                       "(wp.is_cubql_available() is False)")



class HashGrid:
    """Warp's ``wp.HashGrid(dim_x, dim_y, dim_z, device=None, dtype=None)``: bucket points of
    ``dtype`` float16, float32 (the default) or float64 into cells for neighbour queries in
    kernels (``wp.hash_grid_query``), optionally partitioned by an int32 group per point::

        grid = wp.HashGrid(64, 64, 64, dtype=wp.float64)
        grid.build(points, radius, groups=env_ids)   # points: wp.array(dtype=wp.vec3d)
    """

    def __reduce__(self):
        from ..core.errors import refuse
        refuse(self, "its id is an address in this process; send the arrays it is built "
               "from and build it where it is used")

    def __new__(cls, *args, **kwargs):
        obj = super().__new__(cls)
        obj._descriptor = None  # __del__ works on an object __init__ never ran on (as Warp)
        return obj

    def __init__(self, dim_x, dim_y, dim_z, device=None, dtype=None):
        from ..core import types as T
        vec = {T.float16: T.vec3h, T.float32: T.vec3f, T.float64: T.vec3d}
        dtype = T.float32 if dtype is None else dtype
        if dtype not in vec:
            raise TypeError(f"Unsupported dtype {dtype} for HashGrid. Supported types: "
                            "float16, float32, float64")
        self.dtype = dtype
        self._vec_type = vec[dtype]
        self.device = _cpu_only(device, "wp.HashGrid")
        self._grid = _hashgrid.HashGrid(dim_x, dim_y, dim_z, np.dtype(dtype._np_))
        self._descriptor = D.Descriptor(D.KIND_HASH_GRID, list(self._grid.arrays()),
                                        [self._code(), D.float_bits(0.0)])
        self._release = weakref.finalize(self, self._descriptor.release)
        self.reserved = False
        self.groups = None

    def __del__(self):
        release = self.__dict__.get("_release")
        if release is not None:
            release()

    @property
    def id(self):
        """The ``uint64`` kernels take (None for an object that was never initialised)."""
        return None if self._descriptor is None else self._descriptor.id

    def _code(self):
        """The descriptor's precision word (``weft.native.geometry.kernel_api.geo_hg_query``)."""
        return {np.float32: 0, np.float64: 1, np.float16: 2}[self._grid.dtype.type]

    def _refresh(self):
        self._descriptor.set(list(self._grid.arrays()),
                             [self._code(), D.float_bits(float(self._grid.cell_width_inv))])

    def reserve(self, num_points, with_groups=False):
        """Keep buffers for ``num_points`` points, so that builds of up to that many allocate
        nothing (not during a graph capture, as Warp on the CPU)."""
        from .graph import capturing
        if capturing() is not None:
            raise NotImplementedError("HashGrid.reserve() cannot be called during CPU graph "
                                      "capture; reserve before capture")
        self._grid.reserve(num_points, with_groups)
        self.reserved = True
        self._refresh()

    def build(self, points, radius, groups=None):
        """Bucket ``points`` (a ``wp.array`` of the grid's vec3 type, any shape; or an (N, 3)
        numpy array) into cells of width ``radius``; ``groups``: an int32 ``wp.array`` of one
        group id per point, so that ``hash_grid_query(id, p, r, group)`` visits only that
        group's points. During a graph capture the build is recorded and runs at each replay
        on the arrays' contents then."""
        from ..core import types as T
        from .graph import capturing
        if isinstance(points, array):
            if not T.types_equal(points.dtype, self._vec_type):
                raise TypeError(f"Hash grid points should have type {self._vec_type.__name__}, "
                                f"got {T.type_repr(points.dtype)}")
            if points.device != self.device:
                raise RuntimeError("points must live on the same device as this HashGrid")
            size = points.size
        else:
            data = np.asarray(points)
            if data.dtype != self._grid.dtype or data.shape[-1:] != (3,):
                raise TypeError(f"Hash grid points should have type {self._vec_type.__name__}, "
                                f"got a numpy array of {data.dtype} and shape {data.shape}")
            size = data.size // 3
        if not radius > 0.0:
            raise ValueError(f"Hash grid cell width must be positive, got {radius}")
        if groups is not None:
            if getattr(groups, "dtype", None) is not T.int32:
                raise RuntimeError("groups should be an array of type wp.int32")
            if groups.device != self.device:
                raise RuntimeError("groups must live on the same device as this HashGrid")
            if groups.size != size:
                raise RuntimeError("groups must have the same length as points")
        graph = capturing()
        if graph is not None and getattr(graph, "apic", False):
            raise NotImplementedError(
                "HashGrid.build() cannot be used in a saveable APIC capture because HashGrid "
                "serialization is not yet supported; use apic=False or build outside capture")
        self.groups = groups
        self.reserved = True
        if graph is not None:
            graph.record(self._build, (points, radius, groups))
        else:
            self._build(points, radius, groups)

    def _build(self, points, radius, groups):
        data = points.numpy() if isinstance(points, array) else np.asarray(points)
        grp = None if groups is None else groups.numpy().reshape(-1)
        self._grid.build(np.ascontiguousarray(data).reshape(-1, 3), radius, groups=grp)
        self._refresh()

    dim_x = property(attrgetter("_grid.dim_x"))
    dim_y = property(attrgetter("_grid.dim_y"))
    dim_z = property(attrgetter("_grid.dim_z"))


def _vec3_data(name, doc, optional=False):
    """A ``Mesh`` property of vec3 data held by the core (``points``, ``velocities``): read, a
    ``wp.array`` view of the core's array made on first use (None for ``optional`` data the
    mesh has none of); assigned, the new data goes to the core, which refits, and to the
    descriptor."""
    cached = "_" + name

    def get(self):
        if getattr(self, cached) is None and (not optional or getattr(self._core, name).shape[0]):
            setattr(self, cached, array(getattr(self._core, name), dtype=_vec3(), copy=False))
        return getattr(self, cached)

    def put(self, new):
        setattr(self._core, name, _host(new, f"Mesh {name}"))
        setattr(self, cached, new if isinstance(new, array) else None)
        self._descriptor.set(self._arrays(), self._scalars())
    return property(get, put, doc=doc)


def _host(a, what):
    """The host data of a ``wp.array`` (shared, not copied) or of array-like data."""
    if a is None:
        return None
    if isinstance(a, array):
        if a.device.is_cuda:
            raise NotImplementedError(f"{what} on {a.device}: weft builds geometry on the CPU "
                                      "only for now")
        return a._data
    return np.asarray(a)


class Mesh:
    """Warp's ``wp.Mesh(points, indices, velocities=None, support_winding_number=False,
    bvh_constructor=None, bvh_leaf_size=None)``: a triangle mesh with its BVH
    (:mod:`weft.native.geometry.mesh`); ``mesh.id`` is what kernels take. The mesh reads the memory of
    ``points`` (no copy): after moving them (a kernel writing ``mesh.points``), call
    ``refit()``."""

    def __reduce__(self):
        from ..core.errors import refuse
        refuse(self, "its id is an address in this process; send the arrays it is built "
               "from and build it where it is used")

    def __init__(self, points=None, indices=None, velocities=None, support_winding_number=False,
                 bvh_constructor=None, bvh_leaf_size=None, groups=None, device=None):
        from ..native.geometry import mesh as _mesh
        self.device = _cpu_only(device, "wp.Mesh")
        if points is None or indices is None:
            raise TypeError("wp.Mesh(points, indices) needs both arrays")
        _check_groups(groups, len(indices) // 3, "indices / 3")
        if _is_cubql(bvh_constructor):
            _refuse_cubql("mesh", groups, support_winding_number and
                          "support_winding_number=True is not supported with "
                          "bvh_constructor='cubql'")
        self.groups = groups
        self._core = _mesh.Mesh(_host(points, "Mesh points"), _host(indices, "Mesh indices"),
                                _host(velocities, "Mesh velocities"), support_winding_number,
                                bvh_constructor, bvh_leaf_size, groups)
        self._points = points if isinstance(points, array) else None
        self._indices = indices if isinstance(indices, array) else None
        self._velocities = velocities if isinstance(velocities, array) else None
        # average edge length; gradient and tangent buffers (attached for a launch)
        self._descriptor = D.Descriptor(D.KIND_MESH, self._arrays(), self._scalars() + [0] * 4)
        self._descriptor.owner = weakref.ref(self)
        weakref.finalize(self, self._descriptor.release)

    def __del__(self):
        _release(self)

    def _arrays(self):
        c = self._core
        b = c.bvh
        return [c.points, c.indices, b.bounds, b.links, b.prims, c.tris, c.props, c.velocities,
                b.group_table]

    def _scalars(self):
        """The average edge length's word: stale after a build or refit, until a kernel or
        the host first needs the value (``weft.native.geometry.kernel_api._mesh_average``)."""
        a = self._core._average
        return [D.AVG_STALE if a is None else D.float_bits(float(a))]

    @property
    def id(self):
        """The ``uint64`` kernels take (the address of this mesh's descriptor)."""
        return self._descriptor.id

    points = _vec3_data("points", "The points (a ``wp.array`` of vec3); new points of the "
                        "same shape: the mesh reads them and refits (as Warp).")

    @property
    def indices(self):
        if self._indices is None:
            from ..core import types as T
            self._indices = array(self._core.indices, dtype=T.int32, copy=False)
        return self._indices

    velocities = _vec3_data("velocities", "The velocities (None when the mesh has none).",
                            optional=True)

    def _attach_derivatives(self, grads, tangent_of):
        """Point the descriptor at the gradients of ``points``/``velocities`` (``grads``: an
        adjoint launch) and at their tangents (``tangent_of(array)``, a forward-mode launch)."""
        from ..native.geometry.kernel_api import MESH_GRAD, MESH_TAN
        core = self._core
        for kind, (a, values) in enumerate(((self._points, core.points),
                                            (self._velocities, core.velocities))):
            g = a.grad if grads and isinstance(a, array) else None
            t = tangent_of(a) if tangent_of is not None and a is not None else None
            for word, b, what in ((MESH_GRAD, g, "gradient"), (MESH_TAN, t, "tangent")):
                flat = _flat_f32(b, what, copy=what == "tangent")
                if flat is not None and flat.shape[0] != values.size:
                    raise ValueError(f"the {what} of the mesh's {('points', 'velocities')[kind]} "
                                     f"has {flat.shape[0] // 3} vec3 elements, the mesh "
                                     f"{values.size // 3}")
                self._descriptor.attach(word + kind, flat)

    def _detach_derivatives(self):
        from ..native.geometry.kernel_api import MESH_GRAD, MESH_TAN
        for w in (MESH_GRAD, MESH_GRAD + 1, MESH_TAN, MESH_TAN + 1):
            self._descriptor.attach(w, None)

    @property
    def support_winding_number(self):
        return self._core.support_winding_number

    def refit(self):
        """Refit the BVH to the current points (same topology): the core rewrites its arrays
        in place, so only the descriptor's scalar changes."""
        self._core.refit()
        self._descriptor.set_scalars(self._scalars())

    def rebuild(self, constructor=None):
        """Build the BVH anew from the current points."""
        _no_cubql_rebuild(constructor, "mesh BVH", "mesh")
        if constructor is not None:
            from ..native.geometry.mesh import _constructor
            self._core.constructor = _constructor(constructor)
        self._core.build()
        self._descriptor.set(self._arrays(), self._scalars())


class Bvh:
    """Warp's ``wp.Bvh(lowers, uppers, constructor=None, leaf_size=1)``: a BVH over boxes for
    ``wp.bvh_query_aabb``/``bvh_query_ray`` in kernels; it reads the boxes' memory, so after
    changing them call ``refit()``."""

    def __reduce__(self):
        from ..core.errors import refuse
        refuse(self, "its id is an address in this process; send the arrays it is built "
               "from and build it where it is used")

    def __init__(self, lowers, uppers, constructor=None, groups=None, leaf_size=1, device=None):
        from ..native.geometry import mesh as _mesh
        self.device = _cpu_only(device, "wp.Bvh")
        if len(lowers) != len(uppers):
            raise RuntimeError("The same number of lower and upper bounds must be provided")
        _check_groups(groups, len(lowers), "lowers/uppers")
        if _is_cubql(constructor):
            _refuse_cubql("BVH", groups)
        self.groups = groups
        self._core = _mesh.Bvh(_host(lowers, "Bvh lowers"), _host(uppers, "Bvh uppers"),
                               constructor, groups, leaf_size)
        self.lowers, self.uppers = lowers, uppers
        self._descriptor = D.Descriptor(D.KIND_BVH, self._arrays())
        weakref.finalize(self, self._descriptor.release)

    def __del__(self):
        _release(self)

    def _arrays(self):
        return list(self._core.arrays()) + [self._core.group_table]

    @property
    def id(self):
        return self._descriptor.id

    def refit(self):
        self._core.refit()
        self._descriptor.set(self._arrays())

    def rebuild(self, constructor=None):
        _no_cubql_rebuild(constructor, "BVH", "BVH")
        self._core.rebuild(constructor)
        self._descriptor.set(self._arrays())


def _flat_f32(a, what, copy=False):
    """The float32 memory of a vec3 ``wp.array`` (or array-like, copied) as a flat numpy
    array (None stays None); a gradient is shared, not copied."""
    if a is None:
        return None
    data = a._data if isinstance(a, array) else np.asarray(a)
    if isinstance(a, array) and a.device.is_cuda:
        data = a.numpy()
    if data.dtype != np.float32 or not data.flags.c_contiguous:
        if not copy:
            raise TypeError(f"the {what} of a mesh's points must be a contiguous float32 vec3 "
                            f"array, got {data.dtype}")
        data = np.ascontiguousarray(data, np.float32)
    return data.reshape(-1)


@contextmanager
def mesh_derivatives(ck, args, grads=False, tangent_of=None):
    """Around an adjoint (``grads``) or tangent (``tangent_of``) launch of compiled kernel
    ``ck`` with flat arguments ``args``: the meshes whose ids the kernel takes expose the
    gradients of their points and velocities (``array.grad``) or their tangents to the
    kernel's derivative of ``mesh_get_point``, ``mesh_eval_position``, ..."""
    meshes = []
    for name, kind in getattr(ck.abi, "geometry_ids", ()):
        if kind != D.KIND_MESH:
            continue
        try:
            d = D._LIVE.get(int(args[ck.param_index(name)]))
        except (TypeError, ValueError, IndexError):
            continue
        m = d.owner() if d is not None and d.owner is not None else None
        if m is not None and all(m is not o for o in meshes):
            meshes.append(m)
    for m in meshes:
        m._attach_derivatives(grads, tangent_of)
    try:
        yield
    finally:
        for m in meshes:
            m._detach_derivatives()


def _vec3():
    from ..core import types as T
    return T.vec3
