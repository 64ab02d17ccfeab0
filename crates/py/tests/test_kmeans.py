"""K-Means: linerate's single-process K-Means (accel) and the distributed one on 1, 2 and 4
processes against scikit-learn's Lloyd from the same initial centres, on scikit-learn's
digits and on Covertype-shaped data (581,012 x 54, k = 7): the same labels, iteration count
and centres within 1e-5 relative. scikit-learn runs on float64 copies of the float32 data:
its float32 path sums in float32, while ours sums in float64, so float64 is the sharper
reference."""

import numpy.typing as npt
from typing import Any
import functools
import os
import tempfile

import numpy as np
import pytest

import linerate as lr
from collective_rank import dataset
from test_collective import launch

# scikit-learn is installed by requirements-dev.txt: a missing one is a failure, not a skip.
from sklearn.cluster import KMeans  # type: ignore[import-untyped]  # noqa: E402

Array = npt.NDArray[Any]


@functools.lru_cache(maxsize=None)
def scikit_learn(name: str) -> tuple[Array, Array, int]:
    """scikit-learn's Lloyd from the same initial centres: (centres, labels, iterations)."""
    x, init = dataset(name)
    km = KMeans(n_clusters=len(init), init=init.astype(np.float64), n_init=1, algorithm="lloyd", max_iter=300, tol=0.0)
    km.fit(x.astype(np.float64))
    return km.cluster_centers_, km.labels_, km.n_iter_


def assert_matches_scikit_learn(name: str, centres: Array, labels: Array, iters: int, what: str) -> None:
    want_c, want_l, want_iters = scikit_learn(name)
    assert np.array_equal(labels, want_l), f"{what}: {np.sum(labels != want_l)} labels differ"
    # Relative, with a floor of 1 for centre coordinates near zero.
    scale = np.maximum(np.abs(want_c), 1.0)
    assert np.max(np.abs(centres - want_c) / scale) <= 1e-5, what
    assert iters == want_iters, what


@pytest.mark.parametrize("name", ["digits", "covertype"])
def test_single_process_matches_scikit_learn(name: str) -> None:
    x, init = dataset(name)
    centres, labels, iters = lr.collective.kmeans(x, init, 300, 0.0)
    assert_matches_scikit_learn(name, centres, labels, iters, "one process")


@pytest.mark.parametrize("name", ["digits", "covertype"])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_distributed_matches_scikit_learn(name: str, n: int) -> None:
    with tempfile.TemporaryDirectory() as out:
        for r, (code, so, se) in enumerate(launch(n, f"km-{name}-{n}", ["kmeans", name, out])):
            assert code == 0, f"rank {r}: {so}\n{se}"
        labels = np.concatenate([np.load(os.path.join(out, f"labels-{r}.npy")) for r in range(n)])
        centres = [np.load(os.path.join(out, f"centres-{r}.npy")) for r in range(n)]
        iters = [np.load(os.path.join(out, f"iters-{r}.npy"))[0] for r in range(n)]
    for r in range(n):
        assert_matches_scikit_learn(name, centres[r], labels, iters[r], f"rank {r} of {n}")
        # Every rank ends with the same centres, bit for bit.
        assert np.array_equal(centres[r], centres[0]), f"rank {r}"
