#!/usr/bin/python3
"""Writes the fixtures read by npz_test.go (run from this folder).

numpy_written.npz: arrays numpy saved, one per dtype the package reads, plus
a Fortran-ordered and a big-endian array and a name containing "/".
Values are small and fixed so that the Go test can spell them out.
"""
import numpy as np

a = np.arange(6).reshape(2, 3)
np.savez(
    "numpy_written.npz",
    f4=a.astype("<f4") / 2,
    f8=a.astype("<f8") / 4,
    f2=a.astype("<f2"),
    i8=a.astype("<i8") - 3,
    i4=a.astype("<i4") - 3,
    i2=a.astype("<i2") - 3,
    i1=a.astype("i1") - 3,
    u1=a.astype("u1"),
    b1=(a % 2 == 1),
    fortran=np.asfortranarray(a.astype("<f4")),
    bigendian=a.astype(">i4"),
    scalar=np.float32(2.5),
    empty=np.zeros((0, 3), dtype="<f4"),
    **{"grad/left/conv1.weight": a.astype("<f4")},
)
np.save("single.npy", np.arange(4, dtype="<i8").reshape(2, 2))
np.savez("bad_dtype.npz", c=np.zeros(2, dtype="<c8"))
