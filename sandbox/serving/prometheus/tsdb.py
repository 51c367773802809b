"""Samples in memory, with Prometheus's staleness: a series that disappears from a scrape (or
whose target goes away) gets a stale marker, so instant queries stop returning it at once."""

from __future__ import annotations

import math
import struct
import threading
from collections import deque

Labels = frozenset[tuple[str, str]]
STALE = struct.unpack("d", struct.pack("Q", 0x7FF0000000000002))[0]  # Prometheus's StaleNaN bits
MAX_SAMPLES = 4000  # per series


def is_stale(v: float) -> bool:
    return math.isnan(v) and struct.pack("d", v) == struct.pack("Q", 0x7FF0000000000002)


class TSDB:
    """Series → samples (wall-clock seconds, value)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.series: dict[Labels, deque[tuple[float, float]]] = {}

    def append(self, labels: Labels, t: float, v: float) -> None:
        with self.lock:
            s = self.series.get(labels)
            if s is None:
                s = self.series[labels] = deque(maxlen=MAX_SAMPLES)
            s.append((t, v))

    def mark_stale(self, labels: Labels, t: float) -> None:
        with self.lock:
            s = self.series.get(labels)
            if s and not is_stale(s[-1][1]):
                s.append((t, STALE))

    def snapshot(self) -> list[tuple[Labels, list[tuple[float, float]]]]:
        with self.lock:
            return [(k, list(v)) for k, v in self.series.items()]

    def drop_before(self, t: float) -> None:
        with self.lock:
            for k in [k for k, s in self.series.items() if s and s[-1][0] < t]:
                del self.series[k]
