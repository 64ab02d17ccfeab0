"""Compare linerate's SPN evaluator with SPFlow on the same model and inputs, in the same run.

    python crates/spn/bench/spflow_compare.py [--linerate target/release/linerate]
        [--model M.json --inputs I.csv | --vars 10 [--shape learnspn|nips]] [--rows 20000] [--secs 3]
        [--spflow-threads 1,2]

Without --model, `linerate spn generate` makes a model of --shape (default: LearnSPN-shaped,
deep chains of sums over products) with --vars inputs and samples --rows input vectors from it. SPFlow 1.1.0 (package `spflow`) and/or classic SPFlow (package
`spn`) are used if importable (install them in a throwaway venv: see spflow_models.py). Prints
samples/s of each, our single- and multi-core samples/s from `linerate spn bench --eval-only`,
the ratios, and the largest relative difference of the log-likelihoods.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spflow_models as sm  # noqa: E402


def parse_rate(text):
    """'1.23 Mvec/s' -> 1.23e6."""
    value, unit = text.split()
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(unit[0], 1.0)
    return float(value) * scale


def ours(linerate, model, inputs, secs):
    out = subprocess.run([linerate, "spn", "bench", "--model", model, "--inputs", inputs, "--eval-only", "--json", "--secs", str(secs)],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    rows = (doc["tables"] if isinstance(doc, dict) else doc)[0]["rows"]

    def rate(row):
        v = row.get("rate", row.get("rate (vectors/s)", row.get("vectors/s")))
        return float(v) if isinstance(v, (int, float)) else parse_rate(v)

    return rate(rows[0]), rate(rows[1]), rows[1]["measurement"]


def timed(f, X):
    t = time.perf_counter()
    ll = f(X)
    return ll, len(X) / (time.perf_counter() - t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--linerate", default="target/release/linerate")
    ap.add_argument("--model")
    ap.add_argument("--inputs")
    ap.add_argument("--vars", type=int, default=10)
    ap.add_argument("--shape", default="learnspn", choices=["learnspn", "nips"])
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--spflow-threads", default="1,2",
                    help="PyTorch thread counts SPFlow 1.1.0 is measured with (comma-separated)")
    a = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    model, inputs = a.model, a.inputs
    if model is None:
        model, inputs = f"{tmp.name}/model.json", f"{tmp.name}/inputs.csv"
        subprocess.run([a.linerate, "spn", "generate", "--vars", str(a.vars), "--shape", a.shape, "-o", model, "--samples", str(a.rows), "--samples-out", inputs],
                       check=True, capture_output=True)
    m = sm.load(model)
    X = sm.read_csv(inputs)
    n_nodes = len(m["nodes"])
    print(f"model {model}: {n_nodes} nodes, {m['num_vars']} inputs; {len(X)} input vectors ({int(np.isnan(X).sum())} missing values)")
    ours_ll = np.array([float(v) for v in subprocess.run([a.linerate, "spn", "eval", model, inputs], check=True, capture_output=True, text=True).stdout.split()])
    one, many, many_label = ours(a.linerate, model, inputs, a.secs)
    print(f"linerate: {one:,.0f} samples/s on one core; {many:,.0f} samples/s ({many_label})")
    found = False
    for name, build, evaluate in [
        ("SPFlow 1.1.0 (PyTorch, float64, one module per node)", sm.to_spflow, sm.log_likelihood_spflow),
        ("classic SPFlow (numpy)", sm.to_classic, sm.log_likelihood_classic),
    ]:
        try:
            root = build(m)
        except ImportError as e:
            print(f"{name}: not installed ({e})")
            continue
        found = True
        # PyTorch's thread count is set per measurement (classic SPFlow is numpy, one thread);
        # a warm-up call first, so one-off set-up is not timed.
        threads = [int(t) for t in a.spflow_threads.split(",")] if "PyTorch" in name else [None]
        for th in threads:
            if th is not None:
                import torch
                torch.set_num_threads(th)
            evaluate(root, X[:256])
            ll, rate = timed(lambda x: evaluate(root, x), X)
            label = name if th is None else f"{name}, {th} thread(s)"
            print(f"{label}: {rate:,.0f} samples/s; linerate one core is {one / rate:,.0f}x, all cores {many / rate:,.0f}x; "
                  f"largest relative difference of the log-likelihoods {sm.max_rel_diff(ll, ours_ll):.1e}")
    if not found:
        print("no SPFlow installed: nothing to compare against")


if __name__ == "__main__":
    main()
