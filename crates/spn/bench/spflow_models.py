"""Dev tool: linerate SPN JSON models as SPFlow models, evaluated by SPFlow.

- ``to_spflow(model)``: an SPFlow 1.1.0 (PyTorch) module, float64.
- ``to_classic(model)`` / ``from_classic(node)``: classic SPFlow (0.0.4x, package ``spn``) nodes.
- ``log_likelihood_spflow(module, X)``: SPFlow 1.1.0's log-likelihoods (NaN = missing).

SPFlow is an optional development tool: the tests read committed references and never import
this file. Install SPFlow in a throwaway virtual environment, e.g.
``python3 -m venv /tmp/spflow && /tmp/spflow/bin/pip install spflow==1.1.0 scikit-learn``.
Classic SPFlow (``spflow==0.0.48``) has the same distribution name; to use both, install it
elsewhere with ``--no-deps`` and put its ``spn`` package on ``PYTHONPATH``.

Semantics notes (where SPFlow differs from linerate, the inputs used for references avoid it):
SPFlow 1.1.0 stores histogram edges as float32 (integer edges are exact) and clamps tiny bin
probabilities unless ``min_prob=0`` (used here); categorical inputs must lie in 0..K-1 (we pad
the probabilities to 256 categories); classic SPFlow clamps histogram likelihoods below
2.2e-16 up to 2.2e-16 and gives out-of-range categorical values likelihood 1.
"""

import json
import math

import numpy as np


def load(path):
    """The model file as a dict."""
    with open(path) as f:
        return json.load(f)


def to_spflow(model):
    """SPFlow 1.1.0 module of the model (sets torch's default dtype to float64)."""
    import torch

    torch.set_default_dtype(torch.float64)
    from spflow.meta.data import Scope
    from spflow.modules.leaves import Bernoulli, Categorical, Histogram, Normal
    from spflow.modules.products.product import Product
    from spflow.modules.sums.sum import Sum

    built = []
    for n in model["nodes"]:
        t = n["type"]
        if t == "histogram":
            b, d = n["breaks"], n["densities"]
            probs = [di * (b1 - b0) for di, b0, b1 in zip(d, b, b[1:])]
            if any(float(np.float32(x)) != x for x in b):
                raise ValueError("SPFlow 1.1.0 keeps histogram edges in float32; these breaks are not exact there")
            m = Histogram(Scope([n["var"]]), bin_edges=torch.tensor(b), probs=torch.tensor(probs).reshape(1, 1, 1, -1), min_prob=0.0)
        elif t == "categorical":
            p = list(n["probs"]) + [0.0] * (256 - len(n["probs"]))
            m = Categorical(Scope([n["var"]]), probs=torch.tensor(p).reshape(1, 1, 1, -1))
        elif t == "gaussian":
            m = Normal(Scope([n["var"]]), loc=torch.tensor([n["mean"]]).reshape(1, 1, 1), scale=torch.tensor([n["stdev"]]).reshape(1, 1, 1))
        elif t == "bernoulli":
            m = Bernoulli(Scope([n["var"]]), probs=torch.tensor([n["p"]]).reshape(1, 1, 1))
        elif t == "product":
            kids = [built[c] for c in n["children"]]
            m = kids[0] if len(kids) == 1 else Product(inputs=kids)
        elif t == "sum":
            kids = [built[c] for c in n["children"]]
            w = torch.tensor(n["weights"]).reshape(1, len(kids), 1, 1)
            m = Sum(inputs=kids, weights=w)
        else:
            raise ValueError(f"unknown node type {t}")
        built.append(m)
    return built[model.get("root", len(built) - 1)]


def log_likelihood_spflow(module, X, batch=4096):
    """SPFlow 1.1.0 log-likelihoods of the rows of X (float64, NaN = missing)."""
    import torch

    out = []
    with torch.no_grad():
        for i in range(0, len(X), batch):
            x = torch.tensor(np.asarray(X[i : i + batch], dtype=np.float64))
            out.append(module.log_likelihood(x).reshape(-1).numpy())
    return np.concatenate(out)


def to_classic(model):
    """Classic SPFlow root node of the model."""
    from spn.structure.Base import Product, Sum, assign_ids, rebuild_scopes_bottom_up
    from spn.structure.leaves.histogram.Histograms import Histogram
    from spn.structure.leaves.parametric.Parametric import Bernoulli, Categorical, Gaussian

    built = []
    for n in model["nodes"]:
        t = n["type"]
        if t == "histogram":
            b = n["breaks"]
            m = Histogram(list(b), list(n["densities"]), [(x + y) / 2 for x, y in zip(b, b[1:])], scope=[n["var"]])
        elif t == "categorical":
            m = Categorical(p=list(n["probs"]), scope=[n["var"]])
        elif t == "gaussian":
            m = Gaussian(mean=n["mean"], stdev=n["stdev"], scope=[n["var"]])
        elif t == "bernoulli":
            m = Bernoulli(p=n["p"], scope=[n["var"]])
        elif t in ("product", "sum"):
            m = Product() if t == "product" else Sum()
            m.children = [built[c] for c in n["children"]]
            if t == "sum":
                m.weights = list(n["weights"])
        else:
            raise ValueError(f"unknown node type {t}")
        built.append(m)
    root = built[model.get("root", len(built) - 1)]
    assign_ids(root)
    rebuild_scopes_bottom_up(root)
    return root


def from_classic(root, num_vars, name=""):
    """A linerate model dict from a classic SPFlow tree (histogram masses and sum weights are
    renormalised exactly in float64)."""
    from spn.structure.Base import Leaf, Product, Sum
    from spn.structure.leaves.histogram.Histograms import Histogram
    from spn.structure.leaves.parametric.Parametric import Bernoulli, Categorical, Gaussian

    nodes, index = [], {}

    def norm(v):
        s = math.fsum(v)
        return [x / s for x in v]

    stack = [(root, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in index:
            continue
        if not done and not isinstance(node, Leaf):
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(node.children))
            continue
        if isinstance(node, Histogram):
            b = [float(x) for x in node.breaks]
            masses = norm([float(d) * (b1 - b0) for d, b0, b1 in zip(node.densities, b, b[1:])])
            n = {"type": "histogram", "var": int(node.scope[0]), "breaks": b, "densities": [m / (b1 - b0) for m, b0, b1 in zip(masses, b, b[1:])]}
        elif isinstance(node, Categorical):
            n = {"type": "categorical", "var": int(node.scope[0]), "probs": norm([float(p) for p in node.p])}
        elif isinstance(node, Gaussian):
            n = {"type": "gaussian", "var": int(node.scope[0]), "mean": float(node.mean), "stdev": float(node.stdev)}
        elif isinstance(node, Bernoulli):
            n = {"type": "bernoulli", "var": int(node.scope[0]), "p": float(node.p)}
        elif isinstance(node, Product):
            n = {"type": "product", "children": [index[id(c)] for c in node.children]}
        elif isinstance(node, Sum):
            n = {"type": "sum", "children": [index[id(c)] for c in node.children], "weights": norm([float(w) for w in node.weights])}
        else:
            raise ValueError(f"unsupported SPFlow node {type(node).__name__}")
        index[id(node)] = len(nodes)
        n["id"] = len(nodes)
        nodes.append(n)
    return {"format": "linerate-spn", "version": 1, "name": name, "num_vars": num_vars, "nodes": nodes}


def log_likelihood_classic(root, X):
    """Classic SPFlow log-likelihoods of the rows of X."""
    from spn.algorithms.Inference import log_likelihood

    return log_likelihood(root, np.asarray(X, dtype=np.float64)).reshape(-1)


def read_csv(path):
    """Input vectors from a linerate CSV file (``nan`` = missing)."""
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                rows.append([float(x) if x.strip() not in ("", "?") else math.nan for x in line.split(",")])
    return np.array(rows, dtype=np.float64)


def max_rel_diff(a, b):
    """Largest |a-b| / max(|a|, |b|, 1) over finite pairs; inf if the infinities differ."""
    a, b = np.asarray(a), np.asarray(b)
    if not np.array_equal(np.isinf(a), np.isinf(b)):
        return math.inf
    f = np.isfinite(a)
    if not f.any():
        return 0.0
    return float(np.max(np.abs(a[f] - b[f]) / np.maximum(np.maximum(np.abs(a[f]), np.abs(b[f])), 1.0)))
