"""Choosing scenarios: `-k` keywords, as pytest's simple form, and stable `--shard K/N` splits."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from gradaudit.model.scenario import Scenario

SHARD_FORM = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """'2/4' -> (2, 4); raises ValueError with the allowed form."""
    match = SHARD_FORM.match(text)
    if not match:
        raise ValueError(f"shard must be K/N with 1 <= K <= N (e.g. 2/4), got {text!r}")
    k, n = int(match.group(1)), int(match.group(2))
    if not 1 <= k <= n:
        raise ValueError(f"shard must be K/N with 1 <= K <= N (e.g. 2/4), got {text!r}")
    return k, n


def shard_from_environment(text: str, environ: dict) -> tuple[int, int]:
    """`K/N` as parse_shard reads it, or `auto`: the index and count of a SLURM array job
    (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT), or `auto/N`: a Kubernetes
    Indexed Job's index (JOB_COMPLETION_INDEX, from 0) with its count N. ValueError saying what is
    missing."""
    if not text.startswith("auto"):
        return parse_shard(text)
    count = text.removeprefix("auto")
    if count:
        if not count.startswith("/") or not count[1:].isdigit() or int(count[1:]) < 1:
            raise ValueError(f"shard must be K/N, auto or auto/N (e.g. auto/8), got {text!r}")
        if "JOB_COMPLETION_INDEX" not in environ:
            raise ValueError("--shard auto/N reads a Kubernetes Indexed Job's JOB_COMPLETION_INDEX, which is not set")
        return parse_shard(f"{int(environ['JOB_COMPLETION_INDEX']) + 1}/{count[1:]}")
    if "SLURM_ARRAY_TASK_ID" in environ and "SLURM_ARRAY_TASK_COUNT" in environ:
        first = int(environ.get("SLURM_ARRAY_TASK_MIN", "0"))
        return parse_shard(f"{int(environ['SLURM_ARRAY_TASK_ID']) - first + 1}/{environ['SLURM_ARRAY_TASK_COUNT']}")
    raise ValueError(
        "--shard auto reads a SLURM array job's SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT, which are not set (for "
        "a Kubernetes Indexed Job give the count: --shard auto/N)"
    )


def in_shard(name: str, k: int, n: int) -> bool:
    """Whether a scenario belongs to shard k of n: a hash of its name, so every machine agrees."""
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % n == k - 1


def matches(name: str, expression: str) -> bool:
    """pytest's simple -k form: case-insensitive substrings joined by `and`, `or`, `not` and parentheses."""
    tokens = re.findall(r"\(|\)|[^\s()]+", expression)
    position = 0

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def take() -> str:
        nonlocal position
        if position >= len(tokens):
            raise ValueError(f"cannot read -k expression {expression!r}: it ends too early")
        position += 1
        return tokens[position - 1]

    def chain(word: str, operand, combine) -> bool:
        """operand (word operand)*, every operand read even when the result is already known."""
        value = operand()
        while peek() == word:
            take()
            value = combine(operand(), value)
        return value

    def either() -> bool:
        return chain("or", both, lambda new, old: new or old)

    def both() -> bool:
        return chain("and", single, lambda new, old: new and old)

    def single() -> bool:
        token = take()
        if token == "not":
            return not single()
        if token == "(":
            value = either()
            if take() != ")":
                raise ValueError(f"cannot read -k expression {expression!r}: a parenthesis is not closed")
            return value
        if token in ("and", "or", ")"):
            raise ValueError(f"cannot read -k expression {expression!r}: unexpected {token!r}")
        return token.lower() in name.lower()

    if not tokens:
        return True
    result = either()
    if position != len(tokens):
        raise ValueError(
            f"cannot read -k expression {expression!r}: unexpected {tokens[position]!r}; join words with and, or, not"
        )
    return result


def select(scenarios: Sequence[Scenario], keyword: str | None, shard: tuple[int, int] | None) -> list[Scenario]:
    chosen = list(scenarios)
    if keyword:
        chosen = [s for s in chosen if matches(s.name, keyword)]
    if shard:
        chosen = [s for s in chosen if in_shard(s.name, *shard)]
    return chosen
