"""Textures (Warp 1.19's ``wp.Texture1D``/``2D``/``3D``) on the CPU: regularly gridded data with
1, 2 or 4 channels that kernels sample with ``wp.texture_sample`` (CLOSEST or LINEAR filtering,
WRAP/CLAMP/MIRROR/BORDER addressing per axis, normalized or texel coordinates, mip levels).

How a texture reaches a kernel: each texture class is also a weft struct type (its
``_wp_struct_``), so a kernel parameter ``tex: wp.Texture2D``, a struct member of that type and
an array of textures (``wp.array(textures, dtype=wp.Texture2D)``) are split into ordinary
kernel arguments by the struct machinery: the resolution (``width``, ``height``, ``depth``:
what ``tex.width`` reads in a kernel), the modes as integers, and two arrays *shared* by every
element of an array of textures (``StructInfo.shared``): ``k_texels``, the decoded texel values
of every level (float32; 8/16-bit integers normalized, 32-bit integers converted, as Warp's
CPU sampler reads them) and ``k_levels``, per texture 16 rows of (offset, width, height, depth)
of its mip levels. ``k_slot`` says which block of ``k_levels`` is this texture's. The sampling
itself is written in the kernel language (:mod:`weft.stdlib.textures`), so its adjoint and
tangent are derived by weft.
"""
from __future__ import annotations

import enum
import itertools
import weakref

import numpy as np

from ..core import types as T
from .array import array

MAX_MIP_LEVELS = 16
LEVEL_WORDS = 4  # offset, width, height, depth


class TextureFilterMode(enum.IntEnum):
    """How a texture is filtered within a level (and between mip levels)."""
    CLOSEST = 0
    LINEAR = 1


class TextureAddressMode(enum.IntEnum):
    """What coordinates outside the texture read."""
    WRAP = 0
    CLAMP = 1
    MIRROR = 2
    BORDER = 3


_DTYPES = (T.uint8, T.uint16, T.uint32, T.int8, T.int16, T.int32, T.float16, T.float32)
_SUPPORTED = "uint8, uint16, uint32, int8, int16, int32, float16, float32"
_KEYS = itertools.count(1)
_LIVE = weakref.WeakValueDictionary()  # key -> texture (arrays of textures name them by key)


def _canonical_dtype(dtype):
    if dtype is float:
        return T.float32
    if dtype is int:
        return T.int32
    for t in _DTYPES:
        if dtype is t:
            return t
    try:
        np_dt = np.dtype(dtype)
    except TypeError:
        np_dt = None
    for t in _DTYPES:
        if np_dt is not None and np_dt == np.dtype(t._np_) and not isinstance(dtype, type):
            return t
    raise ValueError(f"Unsupported texture dtype: {dtype}. Supported: {_SUPPORTED}")


def decode(raw, dtype):
    """Texel values as the sampler reads them, float32: unsigned 8/16-bit integers scaled to
    [0, 1], signed ones to [-1, 1] (the most negative value read as -1), 32-bit integers
    converted, floats as they are."""
    if dtype is T.uint8:
        return raw.astype(np.float32) / np.float32(255.0)
    if dtype is T.uint16:
        return raw.astype(np.float32) / np.float32(65535.0)
    if dtype is T.int8:
        return np.maximum(raw.astype(np.float32) / np.float32(127.0), np.float32(-1.0))
    if dtype is T.int16:
        return np.maximum(raw.astype(np.float32) / np.float32(32767.0), np.float32(-1.0))
    return raw.astype(np.float32)


def _mode(value, what, enum_type):
    try:
        return enum_type(value)
    except (TypeError, ValueError):
        raise ValueError(f"Invalid texture {what}: {value}") from None


def _axis_mode(address_mode, axis_mode, axis):
    if axis_mode is not None:
        mode = axis_mode
    elif isinstance(address_mode, (tuple, list)):
        mode = address_mode[axis] if axis < len(address_mode) else TextureAddressMode.CLAMP
    else:
        mode = TextureAddressMode.CLAMP if address_mode is None else address_mode
    return _mode(mode, f"address mode for axis {axis}", TextureAddressMode)


def _data_layout(data, ndim):
    """``(width, height, depth, channels, dtype, numpy values)`` of texture data."""
    if isinstance(data, np.ndarray):
        values = data
        dtype = _canonical_dtype(data.dtype)
        vec = 0
    elif isinstance(data, array):
        dtype = _canonical_dtype(T.scalar_of(data.dtype))
        vec = T.element_shape(data.dtype)
        if len(vec) > 1:
            raise ValueError("Texture data must be an array of scalars or vectors")
        vec = vec[0] if vec else 0
        values = data.numpy()
    else:
        raise ValueError("Data must be a Warp array or NumPy array")
    shape = values.shape
    dims = ndim if vec else None
    if vec:
        if values.ndim != ndim + 1:
            raise ValueError(f"{ndim}D texture data with vector dtype must be a {ndim}D wp.array")
        grid, channels = shape[:ndim], vec
    elif values.ndim == ndim:
        grid, channels = shape, 1
    elif values.ndim == ndim + 1:
        grid, channels = shape[:ndim], shape[ndim]
    else:
        raise ValueError(f"{ndim}D texture data must be {ndim}D or {ndim + 1}D array")
    del dims
    grid = tuple(int(s) for s in reversed(grid)) + (1, 1)
    return grid[0], grid[1], grid[2], int(channels), dtype, values


def mip_shapes(base, ndim, num_mip_levels):
    """``[(width, height, depth)]`` of each level (0: the whole chain down to 1)."""
    if num_mip_levels < 0:
        raise ValueError("num_mip_levels must be >= 0")
    largest = max(base[:ndim])
    full = int(np.floor(np.log2(max(largest, 1)))) + 1
    n = full if num_mip_levels == 0 else num_mip_levels
    if n > full:
        raise ValueError(f"num_mip_levels ({n}) exceeds the maximum for base dimensions "
                         f"{base[:ndim]} ({full})")
    if n > MAX_MIP_LEVELS:
        raise ValueError(f"num_mip_levels ({n}) exceeds the maximum supported mip levels "
                         f"({MAX_MIP_LEVELS})")
    out, (w, h, d) = [], base
    for _ in range(n):
        out.append((w, h, d))
        w, h, d = (max(1, w // 2), max(1, h // 2) if ndim > 1 else 1,
                   max(1, d // 2) if ndim > 2 else 1)
    return out


def _halve(values, axis, new):
    """Pairs along ``axis`` averaged (in float64) into ``new`` entries; the last odd entry of
    an odd length pairs with itself."""
    n = values.shape[axis]
    if n == new:
        return values
    v = values.astype(np.float64, copy=False)
    even = np.take(v, 2 * np.arange(new), axis=axis)
    odd = np.take(v, np.minimum(2 * np.arange(new) + 1, n - 1), axis=axis)
    return (even + odd) * 0.5


def mip_chain(values, ndim, shapes):
    """The raw data of every level: each the 2x box filter of the one above, integers rounded
    to nearest and clipped to their type."""
    out = [values]
    for (w, h, d) in shapes[1:]:
        v = out[-1]
        for axis, size in list(zip(range(ndim - 1, -1, -1), (w, h, d)[:ndim])):
            v = _halve(v, axis, size)
        if np.issubdtype(values.dtype, np.integer):
            info = np.iinfo(values.dtype)
            v = np.clip(np.rint(v), info.min, info.max).astype(values.dtype)
        else:
            v = v.astype(values.dtype)
        out.append(v)
    return out


class Texture:
    """A texture (use :class:`Texture1D`, :class:`Texture2D` or :class:`Texture3D`), on the CPU.

    ``data``: shape ``(width[, C])``, ``(height, width[, C])`` or ``(depth, height, width[,
    C])`` (or an array of vec2/vec4), of uint8, uint16, uint32, int8, int16, int32, float16 or
    float32; or ``width``/``height``/``depth``, ``num_channels`` (1, 2, 4) and ``dtype`` for a
    zeroed texture. ``filter_mode`` defaults to LINEAR (CLOSEST for 32-bit integers, which allow
    only CLOSEST); ``address_mode`` one mode or a tuple per axis, ``address_mode_u/v/w`` per
    axis; ``normalized_coords``; ``num_mip_levels`` (1: none, 0: the whole chain) made from
    ``data`` by 2x box filtering, ``mip_filter_mode``."""

    _ndim = 0

    def __new__(cls, *args, **kwargs):
        obj = super().__new__(cls)
        obj._tex_handle = 0
        return obj

    def __init__(self, ndim=None, data=None, width=0, height=0, depth=0, num_channels=0,
                 dtype=None, filter_mode=None, address_mode=TextureAddressMode.CLAMP,
                 address_mode_u=None, address_mode_v=None, address_mode_w=None,
                 normalized_coords=True, num_mip_levels=1, mip_filter_mode=None, device=None,
                 surface_access=False, cuda_array=0):
        from .device import get_device
        if type(self) is Texture:
            if ndim not in (1, 2, 3):
                raise ValueError(f"Texture dimensionality must be 1, 2, or 3, got {ndim}")
        ndim = self._ndim or ndim
        self.device = get_device(device)
        if self.device.is_cuda:
            raise NotImplementedError("weft's textures live on the CPU; create them with "
                                      "device='cpu'")
        if cuda_array:
            raise ValueError("Texture cuda_array was given, but the device is not a CUDA "
                             "device")
        if filter_mode is not None:
            filter_mode = _mode(filter_mode, "filter mode", TextureFilterMode)
        if mip_filter_mode is not None:
            mip_filter_mode = _mode(mip_filter_mode, "mip filter mode", TextureFilterMode)
        modes = [_axis_mode(address_mode, m, k) if k < ndim else TextureAddressMode.CLAMP
                 for k, m in enumerate((address_mode_u, address_mode_v, address_mode_w))]
        values = None
        if data is not None:
            dw, dh, dd, dc, ddt, values = _data_layout(data, ndim)
            for name, given, found in (("width", width, dw), ("height", height, dh),
                                       ("depth", depth, dd)):
                if given and given != found and (name != "height" or ndim > 1) and \
                        (name != "depth" or ndim > 2):
                    raise ValueError(f"Specified texture {name} does not match data {name}")
            if num_channels and num_channels != dc:
                raise ValueError(f"Specified texture channels do not match data channels "
                                 f"(expected {num_channels}, got {dc})")
            if dtype is not None and _canonical_dtype(dtype) is not ddt:
                raise ValueError("Specified texture dtype does not match data dtype")
            width, height, depth, num_channels, dtype = dw, dh, dd, dc, ddt
        height = height if ndim > 1 else 1
        depth = depth if ndim > 2 else 1
        if width <= 0:
            raise ValueError("Texture width must be a positive integer")
        if height <= 0:
            raise ValueError("Texture height must be a positive integer")
        if depth <= 0:
            raise ValueError("Texture depth must be a positive integer")
        if num_channels not in (1, 2, 4):
            raise ValueError("Texture num_channels must be 1, 2, or 4")
        dtype = _canonical_dtype(T.float32 if dtype is None else dtype)
        shapes = mip_shapes((int(width), int(height), int(depth)), ndim, int(num_mip_levels))
        is_int32 = dtype in (T.int32, T.uint32)
        default = TextureFilterMode.CLOSEST if is_int32 else TextureFilterMode.LINEAR
        filter_mode = default if filter_mode is None else filter_mode
        mip_filter_mode = default if mip_filter_mode is None else mip_filter_mode
        if is_int32 and filter_mode != TextureFilterMode.CLOSEST:
            raise ValueError("32-bit integer textures require "
                             "filter_mode=TextureFilterMode.CLOSEST")
        if is_int32 and len(shapes) > 1 and mip_filter_mode != TextureFilterMode.CLOSEST:
            raise ValueError("32-bit integer mipmapped textures require "
                             "mip_filter_mode=TextureFilterMode.CLOSEST")
        if len(shapes) > 1 and data is None:
            raise ValueError("Mipmapped textures require data to be provided at construction")
        if len(shapes) > 1 and surface_access:
            raise ValueError("surface_access is not supported for mipmapped textures")
        self._ndim = ndim
        self._width, self._height, self._depth = int(width), int(height), int(depth)
        self._num_channels = int(num_channels)
        self._dtype = dtype
        self._filter_mode = filter_mode
        self._mip_filter_mode = mip_filter_mode
        self._address_modes = modes
        self._normalized_coords = bool(normalized_coords)
        self._mip_shapes = shapes
        self._key = next(_KEYS)
        self._tex_handle = self._key
        _LIVE[self._key] = self
        # storage: the raw values of every level (copy_to gives them back), the decoded ones
        sizes = [w * h * d * self._num_channels for (w, h, d) in shapes]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._raw = np.zeros(int(offsets[-1]), dtype=dtype._np_)
        levels = np.zeros(MAX_MIP_LEVELS * LEVEL_WORDS, np.int32)
        for k, (w, h, d) in enumerate(shapes):
            levels[k * LEVEL_WORDS:(k + 1) * LEVEL_WORDS] = (offsets[k], w, h, d)
        self._offsets = offsets
        self.k_levels = array(levels, dtype=T.int32, device="cpu")
        self.k_texels = array(np.zeros(int(offsets[-1]), np.float32), dtype=T.float32,
                              device="cpu")
        self._version = 0
        if values is not None:
            values = np.ascontiguousarray(values)
            for k, level in enumerate(mip_chain(values, ndim, shapes)):
                self._write_level(k, level)

    # ----------------------------------------------------------------- storage
    def _write_level(self, k, values):
        lo, hi = int(self._offsets[k]), int(self._offsets[k + 1])
        flat = np.ascontiguousarray(values).reshape(-1).astype(self._dtype._np_, copy=False)
        self._raw[lo:hi] = flat
        self.k_texels.numpy()[lo:hi] = decode(self._raw[lo:hi], self._dtype)
        self._version += 1

    def _get_shape(self):
        shape = (self._width,) if self._ndim == 1 else (self._height, self._width) \
            if self._ndim == 2 else (self._depth, self._height, self._width)
        return shape if self._num_channels == 1 else (*shape, self._num_channels)

    def _check_array(self, a, what):
        if isinstance(a, np.ndarray):
            values = a
            if not (a.flags.c_contiguous):
                raise ValueError(f"{what} array must be contiguous")
        elif isinstance(a, array):
            if not a.is_contiguous:
                raise ValueError(f"{what} array must be contiguous")
            values = None
        else:
            raise ValueError(f"Expected contiguous array or Texture, got {type(a)}")
        w, h, d, c, dt, _ = _data_layout(a, self._ndim) if values is None else \
            _data_layout(values, self._ndim)
        if (w, h, d) != (self._width, self._height, self._depth):
            raise ValueError(f"Incompatible array shape for copy: texture shape="
                             f"{self._get_shape()}, {what.lower()} shape={a.shape}")
        if dt is not self._dtype or c != self._num_channels:
            raise ValueError(f"Incompatible array data type for copy: texture dtype="
                             f"{T.type_name(self._dtype)}, {what.lower()} dtype="
                             f"{T.type_name(dt)}, texture channels={self._num_channels}, "
                             f"{what.lower()} channels={c}")

    def _check_texture(self, other, verb):
        """``verb``: this texture's part in the copy (destination or source)."""
        them = "source" if verb == "destination" else "destination"
        if (other.width, other.height, other.depth) != (self.width, self.height, self.depth):
            raise ValueError(f"Incompatible texture shapes for copy: {verb} shape="
                             f"{self._get_shape()}, {them} shape={other._get_shape()}")
        if other.dtype is not self.dtype or other.num_channels != self.num_channels:
            raise ValueError(f"Incompatible texture data types for copy: {verb} dtype="
                             f"{T.type_name(self.dtype)}, {them} dtype="
                             f"{T.type_name(other.dtype)}, {verb} channels="
                             f"{self.num_channels}, {them} channels={other.num_channels}")

    def copy_from(self, src):
        """Copy data into the texture (level 0) from a NumPy array, a ``wp.array`` or another
        texture of the same shape, dtype and channels."""
        if self.is_mipmapped:
            raise RuntimeError("copy_from is not supported for mipmapped textures; mipmap "
                               "contents are immutable after construction")
        if isinstance(src, Texture):
            self._check_texture(src, "destination")
            self._write_level(0, src._raw[:int(src._offsets[1])])
            return
        self._check_array(src, "Source")
        self._write_level(0, src if isinstance(src, np.ndarray) else src.numpy())

    def copy_to(self, dst):
        """Copy the texture's data (level 0) into a NumPy array, a ``wp.array`` or another
        texture."""
        if self.is_mipmapped:
            raise RuntimeError("copy_to is not supported for mipmapped textures; mipmap "
                               "contents are immutable after construction")
        if isinstance(dst, Texture):
            self._check_texture(dst, "source")
            dst.copy_from(self)
            return
        self._check_array(dst, "Destination")
        level = self._raw[:int(self._offsets[1])]
        if isinstance(dst, np.ndarray):
            dst.reshape(-1)[...] = level.view(dst.dtype) if dst.dtype.itemsize == \
                level.dtype.itemsize and dst.dtype != level.dtype else level
        else:
            view = dst.numpy()
            view.reshape(-1)[...] = level.reshape(-1) if view.dtype == level.dtype else \
                level.reshape(-1).view(view.dtype)
            if getattr(dst, "_exposed", None) is not None:
                dst._data.reshape(-1)[...] = view.reshape(-1)

    def _generate_mipmap_chain(self, data_np):
        """The raw data of every mip level made from level 0's ``data_np`` (Warp's name)."""
        return mip_chain(np.ascontiguousarray(data_np), self._ndim, self._mip_shapes)

    def __del__(self):
        key = self.__dict__.get("_key")
        if key:
            _LIVE.pop(key, None)

    def __ctype__(self):
        """The texture's descriptor fields (Warp's ctypes struct; here a plain record)."""
        from types import SimpleNamespace
        return SimpleNamespace(tex=self._tex_handle, width=self._width, height=self._height,
                               depth=self._depth, num_channels=self._num_channels,
                               dtype=self._dtype, filter_mode=int(self._filter_mode),
                               mip_filter_mode=int(self._mip_filter_mode),
                               num_mip_levels=len(self._mip_shapes),
                               use_normalized_coords=int(self._normalized_coords),
                               address_mode_u=int(self._address_modes[0]),
                               address_mode_v=int(self._address_modes[1]),
                               address_mode_w=int(self._address_modes[2]))

    def numpy(self):
        """Level 0's raw values, shaped as the data given (weft's own addition)."""
        return self._raw[:int(self._offsets[1])].reshape(self._get_shape()).copy()

    # ----------------------------------------------------------------- properties
    ndim = property(lambda self: self._ndim, doc="Texture dimensionality (1, 2, or 3).")
    width = property(lambda self: self._width, doc="Texture width in texels.")
    height = property(lambda self: self._height, doc="Texture height in texels (1 in 1D).")
    depth = property(lambda self: self._depth, doc="Texture depth in texels (1 below 3D).")
    num_channels = property(lambda self: self._num_channels, doc="Number of channels.")
    dtype = property(lambda self: self._dtype, doc="Data type of the texels.")
    filter_mode = property(lambda self: self._filter_mode)
    mip_filter_mode = property(lambda self: self._mip_filter_mode)
    num_mip_levels = property(lambda self: len(self._mip_shapes))
    is_mipmapped = property(lambda self: len(self._mip_shapes) > 1)
    address_mode_u = property(lambda self: self._address_modes[0])
    address_mode_v = property(lambda self: self._address_modes[1])
    address_mode_w = property(lambda self: self._address_modes[2])
    normalized_coords = property(lambda self: self._normalized_coords)

    @property
    def id(self):
        """The texture's handle (nonzero while it lives)."""
        return self._tex_handle

    @property
    def cuda_array(self):
        raise RuntimeError("cuda_array is only supported for CUDA textures.")

    @property
    def cuda_texture(self):
        raise RuntimeError("cuda_texture is only supported for CUDA textures. Use id for a "
                           "device-independent handle.")

    @property
    def cuda_surface(self):
        raise RuntimeError("cuda_surface is only supported for CUDA textures.")

    # what kernels receive (the struct members; see the module docstring)
    k_channels = property(lambda self: self._num_channels)
    k_filter = property(lambda self: int(self._filter_mode))
    k_mip_filter = property(lambda self: int(self._mip_filter_mode))
    k_num_levels = property(lambda self: len(self._mip_shapes))
    k_normalized = property(lambda self: int(self._normalized_coords))
    k_address_u = property(lambda self: int(self._address_modes[0]))
    k_address_v = property(lambda self: int(self._address_modes[1]))
    k_address_w = property(lambda self: int(self._address_modes[2]))
    k_slot = property(lambda self: 0)
    k_key = property(lambda self: self._key)

    def _record(self):
        """One element of an array of textures (the members that are not shared)."""
        return tuple(getattr(self, n) for n in self._wp_struct_.fields
                     if n not in self._wp_struct_.shared)

    @classmethod
    def numpy_dtype(cls):
        return cls._wp_struct_.numpy_dtype()

    @classmethod
    def from_record(cls, rec):
        tex = _LIVE.get(int(rec["k_key"]))
        return tex if tex is not None else cls._wp_default_()

    @classmethod
    def _wp_default_(cls):
        """The unset texture of a struct member (Warp's null texture: samples read 0)."""
        tex = _NULL.get(cls)
        if tex is None:
            tex = object.__new__(cls)
            tex.__dict__.update(_ndim=cls._ndim, _width=0, _height=0, _depth=0,
                                _num_channels=0, _dtype=T.float32,
                                _filter_mode=TextureFilterMode.CLOSEST,
                                _mip_filter_mode=TextureFilterMode.CLOSEST,
                                _address_modes=[TextureAddressMode.CLAMP] * 3,
                                _normalized_coords=True, _mip_shapes=[(0, 0, 0)], _key=0,
                                _tex_handle=0, _version=0,
                                _raw=np.zeros(0, np.float32), _offsets=np.zeros(2, np.int64))
            tex.k_levels = array(np.zeros(MAX_MIP_LEVELS * LEVEL_WORDS, np.int32),
                                 dtype=T.int32, device="cpu")
            tex.k_texels = array(np.zeros(0, np.float32), dtype=T.float32, device="cpu")
            tex.device = tex.k_texels.device
            _NULL[cls] = tex
        return tex

    def __repr__(self):
        return (f"{type(self).__name__}(shape={self._get_shape()}, "
                f"dtype={T.type_name(self._dtype)}, filter_mode={self._filter_mode.name}, "
                f"num_mip_levels={self.num_mip_levels})")


_NULL = {}


class Texture1D(Texture):
    """A 1D texture: ``data`` of shape ``(width,)`` or ``(width, C)``; in kernels
    ``wp.texture_sample(tex, u, dtype=float)`` and ``tex.width``."""
    _ndim = 1

    def __init__(self, data=None, width=0, num_channels=0, dtype=None, filter_mode=None,
                 address_mode=TextureAddressMode.CLAMP, address_mode_u=None,
                 normalized_coords=True, num_mip_levels=1, mip_filter_mode=None, device=None,
                 surface_access=False, cuda_array=0):
        super().__init__(1, data, width, 1, 1, num_channels, dtype, filter_mode, address_mode,
                         address_mode_u, None, None, normalized_coords, num_mip_levels,
                         mip_filter_mode, device, surface_access, cuda_array)


class Texture2D(Texture):
    """A 2D texture: ``data`` of shape ``(height, width[, C])``; in kernels
    ``wp.texture_sample(tex, uv, dtype=...)`` and ``tex.width``, ``tex.height``."""
    _ndim = 2

    def __init__(self, data=None, width=0, height=0, num_channels=0, dtype=None,
                 filter_mode=None, address_mode=TextureAddressMode.CLAMP, address_mode_u=None,
                 address_mode_v=None, normalized_coords=True, num_mip_levels=1,
                 mip_filter_mode=None, device=None, surface_access=False, cuda_array=0):
        super().__init__(2, data, width, height, 1, num_channels, dtype, filter_mode,
                         address_mode, address_mode_u, address_mode_v, None, normalized_coords,
                         num_mip_levels, mip_filter_mode, device, surface_access, cuda_array)


class Texture3D(Texture):
    """A 3D texture: ``data`` of shape ``(depth, height, width[, C])``; in kernels
    ``wp.texture_sample(tex, uvw, dtype=...)`` and ``tex.width``, ``tex.height``,
    ``tex.depth``."""
    _ndim = 3

    def __init__(self, data=None, width=0, height=0, depth=0, num_channels=0, dtype=None,
                 filter_mode=None, address_mode=TextureAddressMode.CLAMP, address_mode_u=None,
                 address_mode_v=None, address_mode_w=None, normalized_coords=True,
                 num_mip_levels=1, mip_filter_mode=None, device=None, surface_access=False,
                 cuda_array=0):
        super().__init__(3, data, width, height, depth, num_channels, dtype, filter_mode,
                         address_mode, address_mode_u, address_mode_v, address_mode_w,
                         normalized_coords, num_mip_levels, mip_filter_mode, device,
                         surface_access, cuda_array)


def _declare(cls, dims):
    from .struct import StructInfo
    fields = {d: T.int32 for d in dims}
    fields.update({n: T.int32 for n in ("k_channels", "k_filter", "k_mip_filter",
                                        "k_num_levels", "k_normalized", "k_address_u",
                                        "k_address_v", "k_address_w", "k_slot")})
    fields["k_key"] = T.int64
    fields["k_texels"] = T.ArrayType(T.float32, 1)
    fields["k_levels"] = T.ArrayType(T.int32, 1)
    info = StructInfo(cls, fields)
    info.shared = frozenset(("k_texels", "k_levels"))
    info.shared_value = _shared_value
    cls._wp_struct_ = info
    cls._wp_texture_ndim_ = len(dims)
    cls.vars = {d: T.int32 for d in dims}


# ---------------------------------------------------------------------- arrays of textures
_SHARED_CACHE = {}


def _shared_value(a, name):
    """The shared member ``name`` of array of textures ``a``: the texels and level tables of
    its textures, concatenated; sets each element's ``k_slot`` to its texture's block."""
    recs = a.numpy()
    keys = [int(k) for k in np.asarray(recs["k_key"]).reshape(-1)]
    texs = [_LIVE.get(k) or a.dtype._wp_default_() for k in keys]
    unique = list(dict.fromkeys(texs))
    sig = tuple((t._key, t._version) for t in unique)
    cached = _SHARED_CACHE.get(id(a))
    if cached is None or cached[0] != sig:
        texels, levels, base = [], [], 0
        for t in unique:
            lv = t.k_levels.numpy().copy()
            lv[0::LEVEL_WORDS] += base
            levels.append(lv)
            texels.append(t.k_texels.numpy())
            base += t.k_texels.numpy().size
        tx = np.concatenate(texels) if texels else np.zeros(0, np.float32)
        lv = np.concatenate(levels) if levels else np.zeros(0, np.int32)
        cached = (sig, array(tx, dtype=T.float32, device="cpu"),
                  array(lv.astype(np.int32), dtype=T.int32, device="cpu"))
        if id(a) not in _SHARED_CACHE:
            weakref.finalize(a, _SHARED_CACHE.pop, id(a), None)
        _SHARED_CACHE[id(a)] = cached
    slots = {t: k for k, t in enumerate(unique)}
    slot_view = a.field("k_slot").numpy()
    slot_view.reshape(-1)[...] = [slots[t] for t in texs]
    return cached[1] if name == "k_texels" else cached[2]


_declare(Texture1D, ("width",))
_declare(Texture2D, ("width", "height"))
_declare(Texture3D, ("width", "height", "depth"))
