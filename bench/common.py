"""What the benchmarks share: their own PostgreSQL database, Django in test mode, Celery queues."""

from __future__ import annotations

import os
import re
import sys

PG_HOST, PG_PORT, PG_USER = "127.0.0.1", 5432, "postgres"
# Celery's INFO line for a finished task; the advance task returns the Outcome's action.
TASK_LINE = re.compile(r"Task instantstart\.operations\.tasks\.advance\[[^\]]+\] succeeded in ([0-9.e-]+)s: '(\w+)'")


def database_url(name: str) -> str:
    return f"postgres://{PG_USER}@{PG_HOST}:{PG_PORT}/{name}"


def ensure_database(name: str) -> None:
    """Create the benchmark's own database when missing (it never touches the test databases)."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname="postgres", autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
            print(f"created database {name}")


def setup_django(db_name: str, script: str) -> None:
    """Django in test mode on the benchmark's database, migrated."""
    os.environ.setdefault("INSTANTSTART_MODE", "test")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "instantstart.test_settings")
    os.environ["DATABASE_URL"] = database_url(db_name)
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    if not getattr(settings, "REDIS_URL", None) or settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        sys.exit(f"{script} needs the test mode (PostgreSQL + Redis): set INSTANTSTART_MODE=test")
    call_command("migrate", verbosity=0)


def drop_queue(queue: str) -> None:
    """Delete the queue's Redis keys (its list, priority lists, binding): leftovers go nowhere."""
    import redis
    from django.conf import settings

    client = redis.Redis.from_url(settings.REDIS_URL)
    for key in list(client.scan_iter(match=f"*{queue}*")):
        client.delete(key)
    client.close()
