"""The JAX releases gradaudit supports, checked before anything of JAX's is touched.

gradaudit replaces one entry of JAX's transpose registry (select_n's, for `--rule`) and reads a
few internal modules (`jax._src.interpreters.ad`, `jax._src.lax.lax`), which move between
releases; a release outside the tested range could make an audit quietly wrong, so it is refused
with a clear message instead. `make matrix` tests both ends. The version is read from the
installed package's metadata, so the check imports no JAX.
"""

from __future__ import annotations

import os
import re
from importlib.metadata import PackageNotFoundError, version

OLDEST = "0.9.0.1"
"""The oldest JAX tested (`make matrix`)."""
BEFORE = "0.12"
"""The first JAX release not yet tested: the newest tested is 0.11.2 (the GPU machine's)."""
ANY_JAX = "GRADAUDIT_ANY_JAX"
"""Set to 1 to run on a JAX outside the range anyway (to try a new release)."""


def _release(text: str) -> tuple[int, ...]:
    """The numeric release of a version string (`0.10.2.dev20261101` -> (0, 10, 2))."""
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0].split(".dev")[0].split("rc")[0])[:4])


def jax_problem() -> str | None:
    """Why the installed JAX cannot be used, or None when it can."""
    try:
        installed = version("jax")
    except PackageNotFoundError:
        return "JAX is not installed: pip install 'jax>=0.9.0.1' (gradaudit audits JAX's automatic differentiation)"
    if os.environ.get(ANY_JAX) == "1" or _release(OLDEST) <= _release(installed) < _release(BEFORE):
        return None
    return (
        f"JAX {installed} is outside the releases gradaudit supports (>= {OLDEST}, < {BEFORE}): it replaces "
        "select_n's transpose rule and reads JAX internals that change between releases. Install a supported "
        f"JAX (pip install 'jax>={OLDEST},<{BEFORE}'), or set {ANY_JAX}=1 to try this one anyway."
    )


class UnsupportedJax(ImportError):
    """The installed JAX is outside the supported range (`jax_problem` says why)."""


def require_supported_jax() -> None:
    """Raise UnsupportedJax unless the installed JAX is supported."""
    problem = jax_problem()
    if problem is not None:
        raise UnsupportedJax(problem)
