"""weft.sparse (Warp's warp.sparse) against scipy.sparse and finite differences."""
