"""JAX's persistent compilation cache, kept under `.gradaudit/cache` like pytest's and ruff's caches.

Almost all of an audit's time is XLA compilation of small programs that are the same from one
run to the next; JAX can keep the compiled executables on disk, keyed by the program, the JAX
and jaxlib versions, the backend and the compiler flags, so a second run of the same scenarios
skips compilation. The settings go into the environment too, so that worker processes (`--jobs`)
share the cache.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_FOLDER = Path(".gradaudit") / "cache"

SETTINGS = {
    "jax_compilation_cache_dir": None,
    "jax_persistent_cache_min_compile_time_secs": 0.0,
    "jax_persistent_cache_min_entry_size_bytes": -1,
}
"""Every program is cached: the audit's programs compile in milliseconds each, but there are hundreds."""


OLDEST_JAXLIB = (0, 10)
"""jaxlib 0.9 on CPU reloads its own cached programs with an error per program ('Target machine
feature +prefer-no-scatter is not supported on the host machine ... could lead to SIGILL'), so
older releases run without the cache."""


def unsupported() -> str | None:
    """Why this JAX runs without the cache, or None when it can use it."""
    import jaxlib

    release = tuple(int(part) for part in jaxlib.__version__.split(".")[:2] if part.isdigit())
    if release < OLDEST_JAXLIB:
        return f"the compilation cache needs jaxlib {'.'.join(map(str, OLDEST_JAXLIB))} or newer (this is {jaxlib.__version__}); running without it"
    return None


def enable(folder: Path) -> str | None:
    """Use `folder` as JAX's compilation cache here and in the workers this process starts.

    Returns why the folder cannot be used (the audit then runs without a cache), or None.
    """
    import jax

    try:
        folder.mkdir(parents=True, exist_ok=True)
        ignore = folder.parent / ".gitignore"
        if folder.parent.name == ".gradaudit" and not ignore.exists():
            ignore.write_text("# created by gradaudit\n*\n", encoding="utf-8")
    except OSError as exc:
        return f"cannot use {folder} as the compilation cache ({exc.strerror or exc}); running without it"
    for name, value in SETTINGS.items():
        value = str(folder.resolve()) if value is None else value
        jax.config.update(name, value)
        os.environ[name.upper()] = str(value)
    return None
