"""K-Means: linerate's single-process K-Means (accel) against scikit-learn's Lloyd from the
same initial centres, and the distributed one on 1, 2 and 4 processes against the single
process. scikit-learn runs on float64 copies of the float32 data: its float32 path sums in
float32, while ours sums in float64, so float64 is the sharper reference."""

import os
import tempfile

import numpy as np
import pytest

import linerate as lr
from collective_rank import dataset
from test_collective import launch

# scikit-learn is installed by requirements-dev.txt: a missing one is a failure, not a skip.
from sklearn.cluster import KMeans  # noqa: E402


@pytest.mark.parametrize("name", ["digits", "covertype"])
def test_single_process_matches_scikit_learn(name):
    x, init = dataset(name)
    centres, labels, iters = lr.collective.kmeans(x, init, 300, 0.0)
    km = KMeans(n_clusters=len(init), init=init.astype(np.float64), n_init=1, algorithm="lloyd", max_iter=300, tol=0.0)
    km.fit(x.astype(np.float64))
    assert np.array_equal(labels, km.labels_), f"{np.sum(labels != km.labels_)} labels differ"
    scale = np.maximum(np.abs(km.cluster_centers_), 1.0)
    assert np.max(np.abs(centres - km.cluster_centers_) / scale) <= 1e-5
    assert iters == km.n_iter_


@pytest.mark.parametrize("name", ["digits", "covertype"])
@pytest.mark.parametrize("n", [1, 2, 4])
def test_distributed_equals_single_process(name, n):
    x, init = dataset(name)
    centres, labels, iters = lr.collective.kmeans(x, init, 300, 0.0)
    with tempfile.TemporaryDirectory() as out:
        for r, (code, so, se) in enumerate(launch(n, f"km-{name}-{n}", ["kmeans", name, out])):
            assert code == 0, f"rank {r}: {so}\n{se}"
        got = np.concatenate([np.load(os.path.join(out, f"labels-{r}.npy")) for r in range(n)])
        assert np.array_equal(got, labels)
        for r in range(n):
            # Integer-valued data: the f64 sums are exact, so the centres agree bit for bit.
            assert np.array_equal(np.load(os.path.join(out, f"centres-{r}.npy")), centres), f"rank {r}"
            assert np.load(os.path.join(out, f"iters-{r}.npy"))[0] == iters
