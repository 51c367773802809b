"""Settings for `make test`: the test mode with PostgreSQL and Redis on 127.0.0.1."""

import os

os.environ.setdefault("INSTANTSTART_MODE", "test")

from .settings import *  # noqa: E402,F403

# Tests create several users each; the production hasher's cost (on purpose ~0.2 s a password)
# would dominate their time. Only tests use this module.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
