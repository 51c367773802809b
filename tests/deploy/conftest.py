"""Fixtures of the deploy tests: a PostgreSQL database of their own for the processes they start."""

from __future__ import annotations

import psycopg
import pytest
from django.conf import settings


@pytest.fixture
def container_database():
    """A database of this checkout's own (named after TEST_DATABASE_NAME), dropped afterwards."""
    db = settings.DATABASES["default"]
    name = f"{db['TEST']['NAME']}_container"
    admin = dict(host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"] or "postgres")
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"postgres://{admin['user']}@{admin['host']}:{admin['port']}/{name}"
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
