"""``wp.Volume``: the host volume of :mod:`weft.native.geometry.volume` with Warp's Python API (value
types, Warp arrays from its queries, raw grid buffers, writing and rebuilding through
:mod:`weft.native.geometry.volume_rebuild`) and the ``id`` kernels take::

    volume = wp.Volume.load_from_nvdb(open("sphere.nvdb", "rb"))
    wp.launch(k, n, inputs=[volume.id, points])
"""
from __future__ import annotations

import weakref

import numpy as np

from ..native.geometry import descriptors as D
from ..native.geometry import volume as _volume
from ..native.geometry.volume_rebuild import VolumeRebuildMixin
from .array import array
from .geometry_common import _cpu_only, _release


# NanoVDB value types and the weft types Warp maps them to (``Volume.dtype``)
_NVDB_DTYPES = {"float": "float32", "double": "float64", "int16": "int16", "int32": "int32",
                "int64": "int64", "Vec3f": "vec3f", "Vec3d": "vec3d", "Half": "float16",
                "uint32": "uint32", "bool": "bool", "Vec4f": "vec4f", "Vec4d": "vec4d",
                "Vec3u8": "vec3ub", "Vec3u16": "vec3us", "uint8": "uint8"}


def _nvdb_dtype(type_str):
    from ..core import types as T
    name = _NVDB_DTYPES.get(type_str)
    return getattr(T, name) if name is not None else None


def _grid_bytes(data):
    """The bytes of a NanoVDB grid buffer given as a ``wp.array`` (of any dtype: its memory),
    a numpy array or bytes-like data."""
    if isinstance(data, array):
        if data.device.is_cuda:
            data = data.numpy()
        else:
            data = data._data
    if isinstance(data, np.ndarray):
        return np.ascontiguousarray(data).view(np.uint8).reshape(-1).tobytes()
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"wp.Volume(data): data must be a wp.array of bytes holding a NanoVDB grid "
                    f"(or bytes), got {type(data).__name__}")


class Volume(VolumeRebuildMixin, _volume.Volume):
    """A sparse NanoVDB volume (Warp's ``wp.Volume``): ``load_from_nvdb``, ``load_from_numpy``,
    ``allocate``, ``allocate_by_tiles``, ``allocate_by_voxels``, ``rebuild``, ``save_to_nvdb``,
    ``array`` (:mod:`weft.native.geometry.volume_rebuild`), ``wp.Volume(data)`` for a raw grid buffer;
    ``volume.id`` is what kernels take."""

    def __reduce__(self):
        from ..core.errors import refuse
        refuse(self, "its id is an address in this process; send the arrays it is built "
               "from and build it where it is used")

    def __init__(self, data=None, copy=True, device=None, *, next_grids=()):
        """``data``: a ``wp.array`` of bytes (or bytes) holding one or more raw NanoVDB grids, as
        Warp's ``wp.Volume(data)``; weft always reads the buffer into its own arrays, so
        ``copy=False`` does not alias it (writes by ``volume_store`` go to the volume, not to
        ``data``)."""
        if data is None:
            raise TypeError("wp.Volume(data) needs a NanoVDB grid buffer (a wp.array of bytes); "
                            "use wp.Volume.load_from_nvdb/load_from_numpy/allocate otherwise")
        if not isinstance(data, _volume.NanoVDBGrid):
            if device is None and isinstance(data, array):
                device = data.device
            grids = _volume.nv.read_nvdb(_grid_bytes(data))
            if not grids:
                raise _volume.NanoVDBError("the buffer holds no NanoVDB grid")
            data, next_grids = grids[0], grids[1:]
        super().__init__(data, next_grids)
        self.device = _cpu_only(device, "wp.Volume")
        self._descriptor = None

    @classmethod
    def load_from_nvdb(cls, file_or_buffer, device=None):
        v = super().load_from_nvdb(file_or_buffer)
        v.device = _cpu_only(device, "wp.Volume")
        return v

    @classmethod
    def load_from_address(cls, grid_ptr, buffer_size=0, device=None):
        """A volume read from the raw NanoVDB grid buffer at address ``grid_ptr`` (``buffer_size``
        bytes, or the size the grid's header declares when 0). Unlike Warp, the memory is read
        once, not aliased."""
        import ctypes
        if not grid_ptr:
            raise RuntimeError("Invalid grid buffer pointer")
        if not buffer_size:
            buffer_size = int(np.frombuffer(ctypes.string_at(int(grid_ptr) + 32, 8), np.uint64)[0])
        return cls(ctypes.string_at(int(grid_ptr), int(buffer_size)), device=device)

    @classmethod
    def load_from_numpy(cls, ndarray, min_world=(0.0, 0.0, 0.0), voxel_size=1.0, bg_value=0.0,
                        device=None):
        v = super().load_from_numpy(np.asarray(ndarray), min_world, voxel_size, bg_value)
        v.device = _cpu_only(device, "wp.Volume")
        return v

    @classmethod
    def allocate(cls, min, max, voxel_size, bg_value=0.0, translation=(0.0, 0.0, 0.0),
                 points_in_world_space=False, device=None, dtype=None):
        """As Warp's; ``dtype`` (weft's, a NanoVDB type name such as ``"Vec3d"``) overrides the
        grid type ``bg_value`` implies."""
        _cpu_only(device, "wp.Volume")
        return super().allocate(min, max, voxel_size, bg_value, translation,
                                points_in_world_space, dtype=dtype)

    def _set_device(self, device):
        self.device = _cpu_only(device, "wp.Volume")

    def _grid_changed(self):
        """After a rebuild: the id stays, its descriptor now points at the new arrays."""
        if getattr(self, "_descriptor", None) is not None:
            self._descriptor.set([self.tree, self.values, self.xform_f, self.xform_d],
                                 self._scalars())

    def array(self):
        """The grid's NanoVDB buffer as a ``wp.array`` of ``uint8`` (a copy, built from the
        current values)."""
        from ..core import types as T
        return array(super().array(), dtype=T.uint8, copy=False)

    def _scalars(self):
        return [self.gtype, self.channels, min(self.get_voxel_count(), 2**31 - 1)]

    @property
    def id(self):
        """The ``uint64`` kernels take (the address of this volume's descriptor)."""
        if self._descriptor is None:
            self._descriptor = D.Descriptor(D.KIND_VOLUME, [
                self.tree, self.values, self.xform_f, self.xform_d],
                self._scalars())
            weakref.finalize(self, self._descriptor.release)  # the id dies with the volume
        return self._descriptor.id

    __del__ = _release

    # ------------------------------------------------------------ Warp's return types
    @property
    def dtype(self):
        """The grid's value type as a weft type (``wp.float32``, ``wp.vec3f``, ...), ``None`` for
        index grids, as Warp."""
        return _nvdb_dtype(self.type_str)

    def get_grid_info(self):
        gi = super().get_grid_info()
        from ..core import types as T
        return gi._replace(translation=T.vec3f(gi.translation),
                           transform_matrix=T.mat33f(*np.asarray(gi.transform_matrix).ravel()))

    def get_tiles(self, out=None):
        """The (tile_count, 3) int32 index-space origins of the tiles (leaves), a ``wp.array``;
        ``out``: a contiguous ``vec3i`` array or (N, 3) int32 array of at least that many rows."""
        return self._ijk_rows(super().get_tiles(), out)

    def get_voxels(self, out=None):
        """The (voxel_count, 3) int32 coordinates of each voxel-data index, a ``wp.array``;
        with ``out``, only the rows of indices some voxel has are written (as Warp)."""
        idx, ijk = self.voxel_index_rows()
        return self._ijk_rows(ijk, out, self.get_voxel_count(), idx)

    def _ijk_rows(self, rows, out, count=None, at=None):
        """``rows`` at row indices ``at`` (default: 0, 1, ...) of ``out`` or of a new (count, 3)
        int32 array of zeros."""
        from ..core import types as T
        count = len(rows) if count is None else count
        at = slice(0, len(rows)) if at is None else at
        if out is None:
            out = array(np.zeros((count, 3), np.int32), dtype=T.int32, device=self.device)
        elif not isinstance(out, array) or out.device != self.device or out.shape[0] < count:
            raise RuntimeError(f"'out' array must an array with at least {count} rows on "
                               f"device {self.device}")
        vec3i = out.dtype is T.vec3i and out.ndim == 1
        if not (vec3i or (out.dtype is T.int32 and out.ndim == 2 and out.shape[1] == 3)) \
                or not out.is_contiguous:
            raise RuntimeError("'out' must be a contiguous 1D array with type vec3i or a 2D array "
                               "of type int32 with shape (N, 3) ")
        out._data.reshape(-1, 3)[at] = rows
        return out

    def feature_array(self, feature_index, dtype=None):
        """Blind-data array ``feature_index`` as a ``wp.array`` over the volume's copy of it
        (``dtype`` inferred from its type, bytes when unknown; a byte array may be viewed as any
        type whose size divides it), as Warp."""
        from ..core import types as T
        info = self.get_feature_array_info(feature_index)
        if dtype is None:
            dtype = _nvdb_dtype(info.type_str) or T.uint8
        size = T.type_size_in_bytes(dtype)
        count, value_size = info.value_count, info.value_size
        if size == 1:
            count, value_size = count * value_size, 1
        elif value_size == 1 and count % size == 0:
            count, value_size = count // size, size
        if size != value_size:
            raise RuntimeError(f"Cannot cast feature data of size {value_size} to array dtype "
                               f"{getattr(dtype, '__name__', dtype)}")
        raw = self.grid.blind_data[feature_index].data
        scalar = T.type_scalar_type(dtype)
        length = getattr(dtype, "_length_", 0) or 1
        view = raw.view(np.dtype(scalar._np_)).reshape((count, length) if length > 1 else count)
        return array(view, dtype=dtype, copy=False, device=self.device)
