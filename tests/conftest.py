"""Strict JAX flags for every test: implicit rank promotion is a bug in our code, not a feature."""

import jax
import pytest

jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture(scope="session")
def catalog_report():
    """The whole catalog audited once, as a default run does (groups, bundles, literal functions),
    under the legacy rule, in this process: shared by the tests that compare other routes with it."""
    from gradaudit.model.options import Options
    from gradaudit.service import audit
    from gradaudit.sources.scenario_files import load_paths
    from tests.helpers import ROOT

    scenarios = load_paths([str(ROOT / "scenarios")]).scenarios
    return audit(scenarios, Options(rule="legacy", jobs=0, cache=None))
