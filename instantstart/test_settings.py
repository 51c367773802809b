"""Settings for `make test`: the test mode with PostgreSQL and Redis on 127.0.0.1."""

import os

os.environ.setdefault("INSTANTSTART_MODE", "test")

from .settings import *  # noqa: E402,F403
