"""Kernel-language helpers of the index-grid samples (:mod:`.geometry_volume`)."""
from weft.stdlib import kernel_scope as wp


@wp.func
def volume_index_value(voxel_data, background, d):
    """``voxel_data[d]``, or ``background`` for a voxel without data (``d`` -1 or past the
    array's end): a corner of ``volume_sample_index``, differentiable into both."""
    if d >= wp.int64(0) and d < wp.int64(voxel_data.shape[0]):
        return voxel_data[d]
    return background
