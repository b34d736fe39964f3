"""tasks.arrays: numpy's set results on integer arrays, computed by sorting."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tasks import arrays

int_arrays = hnp.arrays(
    st.sampled_from([np.int64, np.int32, np.uint8]), st.integers(0, 60), elements=st.integers(0, 40)
)


@given(int_arrays)
def test_unique_is_numpys(values):
    got = arrays.unique(values)
    assert got.dtype == values.dtype and np.array_equal(got, np.unique(values))


@given(st.lists(int_arrays, max_size=5))
def test_union_is_numpys(parts):
    got = arrays.union([p.astype(np.int64) for p in parts])
    want = np.unique(np.concatenate([p.astype(np.int64) for p in parts])) if parts else np.zeros(0, np.int64)
    assert got.dtype == np.int64 and np.array_equal(got, want)


wide_arrays = hnp.arrays(np.int64, st.integers(0, 60), elements=st.integers(0, 2**40))


@given(st.one_of(int_arrays, wide_arrays), st.one_of(int_arrays, wide_arrays))
def test_isin_is_numpys(values, pool):
    """Either side may be the longer one (the shorter is sorted), of any integer dtype; values of a
    wide range take the sorting paths, a narrow pool numpy's lookup table."""
    got = arrays.isin(values, pool)
    assert got.dtype == bool and np.array_equal(got, np.isin(values, pool))
