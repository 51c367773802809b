"""Resource quantities ("500m", "16Gi", "2") as numbers, for the scheduler's arithmetic."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

_SUFFIX = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": 10**3,
    "K": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}


def parse_quantity(q: object) -> Decimal:
    if isinstance(q, bool):
        raise ValueError(f"invalid quantity {q!r}")
    if isinstance(q, int | float):
        return Decimal(str(q))
    s = str(q).strip()
    for suf in sorted(_SUFFIX, key=len, reverse=True):
        if s.endswith(suf) and len(s) > len(suf):
            try:
                return Decimal(s[: -len(suf)]) * Decimal(_SUFFIX[suf])
            except InvalidOperation:
                break
    try:
        return Decimal(s)
    except InvalidOperation:
        raise ValueError(f"invalid quantity {q!r}")


def is_quantity(q: object) -> bool:
    try:
        parse_quantity(q)
        return True
    except ValueError:
        return False
