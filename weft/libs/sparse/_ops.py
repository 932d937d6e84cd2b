"""The kernel-API funcs of weft.sparse and the matrix operators (attached to ``BsrMatrix`` and
``_BsrScalingExpression``). The operations are in ``_assembly`` (triplets, compression, assign
and copy), ``_transforms`` (transposition, diagonals, scale and axpy) and ``_products``
(``bsr_mm``, ``bsr_mv``)."""
# (no ``from __future__ import annotations``: the kernel-API funcs' annotations are evaluated)
import weft as wp
from weft.core.typeinfo import is_array

from ._assembly import bsr_copy
from ._matrix import BsrMatrix, _BsrScalingExpression
from ._products import bsr_mm, bsr_mv
from ._transforms import bsr_axpy, bsr_scale, bsr_transposed


# ----------------------------------------------------------------------------- kernel API

@wp.func
def bsr_row_index(offsets: wp.array(dtype=int), row_count: int, block_index: int) -> int:
    """Index of the row containing block ``block_index``, or -1 (binary search in
    ``offsets``)."""
    lo = int(0)
    hi = row_count
    res = int(-1)
    if block_index >= 0 and block_index < offsets[row_count]:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if offsets[mid] <= block_index:
                lo = mid
            else:
                hi = mid
        res = lo
    return res


@wp.func
def bsr_block_index(row: int, col: int, bsr_offsets: wp.array(dtype=int),
                    bsr_columns: wp.array(dtype=int)) -> int:
    """Index of the block at ``(row, col)`` of a compact matrix with sorted columns, or -1."""
    res = int(-1)
    if row >= 0:
        lo = bsr_offsets[row]
        hi = bsr_offsets[row + 1]
        while lo < hi:
            mid = (lo + hi) // 2
            if bsr_columns[mid] < col:
                lo = mid + 1
            else:
                hi = mid
        if lo < bsr_offsets[row + 1]:
            if bsr_columns[lo] == col:
                res = lo
    return res


# ----------------------------------------------------------------------------- operators

def _add(self, y):
    return bsr_axpy(y, bsr_copy(self))


def _radd(self, x):
    return bsr_axpy(x, bsr_copy(self))


def _sub(self, y):
    return bsr_axpy(y, bsr_copy(self), alpha=-1.0)


def _rsub(self, x):
    return bsr_axpy(x, bsr_copy(self), beta=-1.0)


def _matmul(self, y):
    if is_array(y):
        return bsr_mv(self, y)
    return bsr_mm(self, y)


def _rmatmul(self, x):
    if is_array(x):
        return bsr_mv(self, x, transpose=True)
    return bsr_mm(x, self)


def _iadd(self, y):
    return bsr_axpy(y, self)


def _isub(self, y):
    return bsr_axpy(y, self, alpha=-1.0)


def _imul(self, y):
    return bsr_scale(self, y)


def _imatmul(self, y):
    return bsr_mm(self, y, self)


def _transpose(self):
    """A transposed copy of this matrix."""
    return bsr_transposed(self)


def _expr_transpose(self):
    """The transposed expression (its matrix transposed now, the scale kept lazy)."""
    return _BsrScalingExpression(bsr_transposed(self.mat), self.scale)


def _eval(self):
    """The expression as a new matrix."""
    return bsr_copy(self)


for _cls in (BsrMatrix, _BsrScalingExpression):
    _cls.__add__, _cls.__radd__, _cls.__sub__, _cls.__rsub__ = _add, _radd, _sub, _rsub
    _cls.__matmul__, _cls.__rmatmul__ = _matmul, _rmatmul
BsrMatrix.__iadd__, BsrMatrix.__isub__, BsrMatrix.__imul__ = _iadd, _isub, _imul
BsrMatrix.__imatmul__, BsrMatrix.transpose = _imatmul, _transpose
_BsrScalingExpression.transpose, _BsrScalingExpression.eval = _expr_transpose, _eval
