"""Dev tool: (re)make the committed SPN test data and its SPFlow reference log-likelihoods.

    PYTHONPATH=<dir holding classic SPFlow's `spn` package> \\
        /tmp/spflow/bin/python crates/spn/bench/make_test_data.py target/release/linerate crates/spn/tests/data

Needs SPFlow 1.1.0 (the references), classic SPFlow 0.0.4x (learning the digits model, the
cross-check, the text export) and scikit-learn (the digits data ships inside the package).
Writes, for each model NAME: NAME.json (the model), NAME.ref.json (inputs with null for
missing values, and the log-likelihoods SPFlow 1.1.0 computed in float64).
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spflow_models as sm  # noqa: E402


def spflow_versions():
    import sklearn
    import spflow
    import torch

    return f"SPFlow {spflow.__version__} (PyTorch {torch.__version__}, float64), scikit-learn {sklearn.__version__}"


def write_refs(out, name, model, X, note):
    """Evaluate with SPFlow 1.1.0, cross-check with classic SPFlow, write NAME.ref.json."""
    ll = sm.log_likelihood_spflow(sm.to_spflow(model), X)
    classic = sm.log_likelihood_classic(sm.to_classic(model), X)
    diff = sm.max_rel_diff(ll, classic)
    assert diff < 1e-12, f"{name}: SPFlow 1.1.0 and classic SPFlow differ by {diff}"
    ref = {
        "model": f"{name}.json",
        "reference": f"log-likelihoods computed by {spflow_versions()} via crates/spn/bench/spflow_models.py",
        "cross_check": f"classic SPFlow (spn.algorithms.Inference.log_likelihood) agrees to {diff:.1e} relative",
        "note": note,
        "inputs": [[None if math.isnan(v) else v for v in row] for row in X.tolist()],
        "log_likelihood": ll.tolist(),
    }
    (out / f"{name}.ref.json").write_text(json.dumps(ref, separators=(",", ":")) + "\n")
    print(f"{name}: {len(X)} inputs, {int(np.isnan(X).sum())} missing, SPFlow vs classic {diff:.1e}")
    return ll


def generated(linerate, out, name, args, rows, missing, seed):
    """A model from `linerate spn generate` and inputs sampled from it."""
    csv = out / f"{name}.inputs.tmp.csv"
    subprocess.run([linerate, "spn", "generate", *args, "--seed", str(seed), "-o", str(out / f"{name}.json"),
                    "--samples", str(rows), "--samples-out", str(csv), "--missing", str(missing)], check=True)
    X = sm.read_csv(csv)
    csv.unlink()
    return sm.load(out / f"{name}.json"), X


def digits(out):
    """LearnSPN (classic SPFlow, histogram leaves) on scikit-learn's digits, rows 0..1499;
    held-out rows 1500.. with 15% of the values missing as inputs."""
    from sklearn.datasets import load_digits
    from spn.algorithms.LearningWrappers import learn_mspn
    from spn.io.Text import spn_to_str_equation
    from spn.structure.Base import Context
    from spn.structure.StatisticalTypes import MetaType

    data = load_digits().data.astype(np.float64)
    ctx = Context(meta_types=[MetaType.DISCRETE] * 64)
    ctx.domains = np.array([np.arange(17.0)] * 64)
    np.random.seed(17)
    root = learn_mspn(data[:1500], ctx, min_instances_slice=100)
    model = sm.from_classic(root, 64, "digits-learnspn")
    (out / "digits.json").write_text(json.dumps(model))
    subprocess.run([sys.argv[1], "spn", "compile", str(out / "digits.json"), "-o", str(out / "digits.json")], check=True, capture_output=True)
    # SPFlow's own text export of the learned model (histogram arrays at 4 decimals).
    (out / "digits.spflow.txt").write_text(spn_to_str_equation(root) + "\n")
    X = data[1500:].copy()
    rng = np.random.default_rng(5)
    X[rng.random(X.shape) < 0.15] = np.nan
    return sm.load(out / "digits.json"), X, root


def main():
    linerate, out = sys.argv[1], Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    m, X = generated(linerate, out, "nips10", ["--vars", "10"], 300, 0.15, 1)
    write_refs(out, "nips10", m, X, "NIPS10-like random model (linerate spn generate --vars 10 --seed 1); inputs sampled from it")
    m, X = generated(linerate, out, "mixed8", ["--vars", "8", "--nodes", "400", "--leaves", "mixed"], 300, 0.15, 5)
    write_refs(out, "mixed8", m, X, "8 inputs, histogram/categorical/Gaussian/Bernoulli leaves; inputs sampled from it (Gaussian ones are not integers)")
    m, X, root = digits(out)
    write_refs(out, "digits", m, X, "LearnSPN on sklearn digits[:1500] by classic SPFlow (learn_mspn, min_instances_slice=100); inputs: digits[1500:], 15% missing")
    # The text export: SPFlow parses it itself; linerate renormalises its rounded histograms.
    from spn.io.Text import str_to_spn
    from spn.structure.leaves.histogram.Text import add_histogram_text_support

    add_histogram_text_support()
    parsed = str_to_spn((out / "digits.spflow.txt").read_text())
    ll_text = sm.log_likelihood_classic(parsed, X)
    ref = {
        "model": "digits.spflow.txt",
        "reference": f"classic SPFlow's str_to_spn + log_likelihood on its own text export ({spflow_versions()})",
        "note": "SPFlow prints histogram arrays with 4 decimals; linerate rescales each histogram to mass 1, so the two agree only to about 1e-3",
        "inputs": [[None if math.isnan(v) else v for v in row] for row in X.tolist()],
        "log_likelihood": ll_text.tolist(),
    }
    (out / "digits.spflow.ref.json").write_text(json.dumps(ref, separators=(",", ":")) + "\n")
    # Our full-precision text writer must be read by SPFlow exactly.
    txt = out / "digits.full.tmp.txt"
    subprocess.run([linerate, "spn", "compile", str(out / "digits.json"), "--spflow-text", str(txt)], check=True, capture_output=True)
    exact = sm.log_likelihood_classic(str_to_spn(txt.read_text()), X)
    txt.unlink()
    ours_ref = json.loads((out / "digits.ref.json").read_text())["log_likelihood"]
    print("digits: linerate's text export read by SPFlow's str_to_spn agrees to", sm.max_rel_diff(exact, ours_ref))
    print("digits: SPFlow on its 4-decimal text export vs the exact model:", sm.max_rel_diff(ll_text, ours_ref))


if __name__ == "__main__":
    main()
