"""examples/hessian_rows.yaml: row-wise losses whose Hessian is zero between rows, audited at order 2.

gradaudit's verdict is checked against plain JAX's own Hessian paths computed here, not against a
stored answer: on a jaxlib whose forward-over-forward Hessians put numbers between rows (0.10.2 on
CPU, docs/found.md) the audit must fail and name exactly those paths; on one that does not, pass.
"""

import importlib.util
import json
import re

import jax
import numpy as np
import pytest

from gradaudit.model.paths import HESSIAN_FWD_FWD, JIT_HESSIAN_FWD_FWD, JIT_HESSIAN_FWD_REV, JIT_HESSIAN_REV_REV
from tests.helpers import ROOT, run_cli

EXAMPLE = ROOT / "examples" / "hessian_rows.yaml"
ROWS = {
    "squared-row-sums-16-rows": ("squared_row_sums", 16),
    "log-softmax-sum-16-rows": ("log_softmax_sum", 16),
    "squared-row-sums-4-rows": ("squared_row_sums", 4),
}
"""Each scenario's function in examples/hessian_rows.py and its number of rows."""


def _module():
    spec = importlib.util.spec_from_file_location("hessian_rows", ROOT / "examples" / "hessian_rows.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _between_rows(location: str) -> bool:
    """Whether a Hessian entry 'd2 out/d x0 d x0[i, j, k, l]' pairs two different rows."""
    found = re.search(r"\[(\d+), \d+, (\d+), \d+\]$", location)
    return found is not None and found[1] != found[2]


def _wrong_between_rows(fn, logits: np.ndarray) -> set[str]:
    """The plain-JAX Hessian paths that put a number between rows (the true Hessian has none there)."""
    paths = {
        HESSIAN_FWD_FWD: jax.jacfwd(jax.jacfwd(fn)),
        JIT_HESSIAN_FWD_FWD: jax.jit(jax.jacfwd(jax.jacfwd(fn))),
        JIT_HESSIAN_FWD_REV: jax.jit(jax.jacfwd(jax.jacrev(fn))),
        JIT_HESSIAN_REV_REV: jax.jit(jax.jacrev(jax.jacrev(fn))),
    }
    rows = logits.shape[0]
    between = ~np.eye(rows, dtype=bool)[:, None, :, None].repeat(logits.shape[1], 1).repeat(logits.shape[1], 3)
    wrong = set()
    for name, hessian in paths.items():
        h = np.asarray(hessian(logits), np.float64)
        if np.abs(h[between]).max() > 1e-3 * np.abs(h).max():
            wrong.add(name)
    return wrong


@pytest.mark.slow
def test_the_audit_fails_where_plain_jax_hessians_couple_rows_and_names_those_paths(tmp_path):
    report = tmp_path / "report.json"
    ran = run_cli("run", str(EXAMPLE), "--json", str(report), "-q")
    results = {r["name"]: r for r in json.loads(report.read_text())["results"]}
    module = _module()
    inputs = {r["name"]: np.asarray(r["inputs"]["x0"], np.float32) for r in results.values()}
    any_wrong = False
    for name, (function, rows) in ROWS.items():
        logits = inputs[name]
        assert logits.shape == (rows, 5)
        wrong = _wrong_between_rows(getattr(module, function), logits)
        any_wrong |= bool(wrong)
        result = results[name]
        assert result["status"] == ("mismatch" if wrong else "consistent"), (name, wrong, result["findings"])
        named = {
            path
            for finding in result["findings"]
            if _between_rows(finding.get("location") or "")
            for path, value in finding["values"].items()
            if value != 0
        }
        assert named == wrong, (name, named, wrong)
        assert all(f["class"] in ("wrong", "eager-jit") for f in result["findings"]), name
    assert ran.exit_code == (1 if any_wrong else 0), ran.stderr
