"""Schemathesis over /api/v1/schema/ against the app (in process, WSGI), as the issue's third-party
run did: generated requests for every operation, every check; the API never answers a 5xx and
never a status code its schema does not document. A fixed seed and a bound on examples keep it to
a couple of minutes; `make fuzz` runs many more (FUZZ_EXAMPLES)."""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi import checks

from tests.clusters.helpers import cluster_with_group

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))

pytestmark = [pytest.mark.fuzz, pytest.mark.usefixtures("sandbox", "no_enqueue")]

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Every operation's test has the one node id below, and xdist runs one of them (1 of 74, measured).
    pytest.skip("run in one process (without -n), as `make test` and `make fuzz` do", allow_module_level=True)


def _openapi() -> dict:
    """The document /api/v1/schema/ serves (read without a request: no database at collection)."""
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


schema = schemathesis.openapi.from_dict(_openapi())
schema.app = get_wsgi_application()


@pytest.fixture(autouse=True)
def in_process(db, team):
    # One real object of each kind, so generated ids sometimes meet something that exists.
    cluster_with_group(team, name="fleet", hyperpod_cluster_name="fleet-hp")
    # The WSGI handler closes the database connection after each request; in process, that is the
    # test's own transaction. Django's test client keeps it open the same way.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=True,  # the fixed seed: the same cases on every run
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_generated_requests_get_documented_answers_and_no_server_error(case, admin_token):
    # Every check but one: a body the schema allows may still be refused by the cloud checks (a zone
    # the region lacks, a type the zone does not offer), which no schema can express.
    case.call_and_validate(
        headers={"Authorization": f"Bearer {admin_token}"}, excluded_checks=[checks.positive_data_acceptance]
    )
