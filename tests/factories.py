"""factory_boy factories for the rows tests start from: teams, users with their membership, tokens,
clusters, instance groups, storage and operations.

Rows only: nothing here calls a service or the cloud. A test that needs what a service does (an
audit event, an enqueued operation) calls the service; a test that needs a cluster to exist, in a
given state, builds it here::

    cluster = ClusterFactory(team=team, status=ClusterStatus.ACTIVE, hyperpod_cluster_name="train-hp")
    InstanceGroupFactory(cluster=cluster, name="workers", count=2)
"""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone

from clusters.models import Cluster, ClusterStatus, InstanceGroup, Storage, StorageKind, StorageStatus
from instantstart.operations.models import Operation, OperationStatus, Phase, PhaseStatus
from instantstart.tenancy.models import Membership, Team
from instantstart.tenancy.roles import Role
from instantstart.tenancy.services import create_token, system_access


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"team-{n}")
    name = factory.LazyAttribute(lambda team: team.slug.replace("-", " ").title())


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    # Known to the tests that log in through the form.
    password = factory.LazyAttribute(lambda user: make_password(password_of(user.username)))


def password_of(username: str) -> str:
    return f"pw-{username}-123"


class MembershipFactory(factory.django.DjangoModelFactory):
    """A user in a team with a role: ``MembershipFactory(team=team, user__username="alice", role=...)``."""

    class Meta:
        model = Membership

    team = factory.SubFactory(TeamFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.MEMBER


def member(team: Team, username: str, role: str):
    """A user of ``team`` with ``role`` (the user)."""
    return MembershipFactory(team=team, user__username=username, role=role).user


def token(team: Team, user, role: str) -> str:
    """A new API token of ``user`` in ``team`` with ``role``; the raw secret, as the user is shown it once."""
    _, raw = create_token(access=system_access(team, user), user=user, name=f"{user.username}-token", role=role)
    return raw


class ClusterFactory(factory.django.DjangoModelFactory):
    """A cluster row as an operation would have left it; ``status`` decides which state that is."""

    class Meta:
        model = Cluster

    team = factory.SubFactory(TeamFactory)
    name = factory.Sequence(lambda n: f"cluster-{n}")
    region = "us-west-2"
    availability_zone = "us-west-2a"
    status = ClusterStatus.ACTIVE


class InstanceGroupFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = InstanceGroup

    cluster = factory.SubFactory(ClusterFactory)
    name = "workers"
    instance_type = "ml.g5.xlarge"
    count = 2
    availability_zone = factory.LazyAttribute(lambda group: group.cluster.availability_zone)


class StorageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Storage

    cluster = factory.SubFactory(ClusterFactory)
    name = "data"
    kind = StorageKind.S3
    bucket = factory.LazyAttribute(lambda storage: f"{storage.cluster.team.slug}-{storage.name}")
    status = StorageStatus.ATTACHED


# The phases of `engine.selftest` (the kind tests use when the kind does not matter), by operation status.
SELFTEST_PHASES = {
    OperationStatus.PENDING: ["pending", "pending", "pending"],
    OperationStatus.RUNNING: ["succeeded", "running", "pending"],
    OperationStatus.SUCCEEDED: ["succeeded", "succeeded", "succeeded"],
    OperationStatus.FAILED: ["succeeded", "failed", "pending"],
    OperationStatus.CANCELLED: ["succeeded", "cancelled", "pending"],
}
TERMINAL = (OperationStatus.SUCCEEDED, OperationStatus.FAILED, OperationStatus.CANCELLED)
PHASE_DONE = (PhaseStatus.SUCCEEDED, PhaseStatus.FAILED, PhaseStatus.CANCELLED)


class OperationFactory(factory.django.DjangoModelFactory):
    """An operation in a given status, written directly (no worker runs it), with its phases.

    ``OperationFactory(team=team, status=OperationStatus.FAILED)`` is an `engine.selftest` with the
    phases of that status; ``target=cluster`` makes it the cluster's; ``phases=[("preflight",
    "succeeded"), …]`` names them.
    """

    class Meta:
        model = Operation
        exclude = ("target", "now")
        skip_postgeneration_save = True

    team = factory.SubFactory(TeamFactory)
    kind = "engine.selftest"
    via = "api"
    status = OperationStatus.RUNNING
    target = None
    now = factory.LazyFunction(timezone.now)
    target_type = factory.LazyAttribute(lambda o: ContentType.objects.get_for_model(o.target) if o.target else None)
    target_id = factory.LazyAttribute(lambda o: str(o.target.pk) if o.target else "")
    target_repr = factory.LazyAttribute(lambda o: str(o.target)[:200] if o.target else "")
    started_at = factory.LazyAttribute(lambda o: None if o.status == OperationStatus.PENDING else o.now)
    finished_at = factory.LazyAttribute(lambda o: o.now if o.status in TERMINAL else None)

    @factory.post_generation
    def phases(operation, create, extracted, **kwargs):  # noqa: N805 - factory_boy's hook signature
        named = extracted or list(zip(["work", "wait", "finish"], SELFTEST_PHASES[operation.status], strict=True))
        started = operation.started_at
        for index, (name, status) in enumerate(named):
            Phase.objects.create(
                operation=operation,
                index=index,
                name=name,
                status=status,
                attempts=0 if status == PhaseStatus.PENDING else 1,
                message=f"{name} message" if status != PhaseStatus.PENDING else "",
                started_at=None if status == PhaseStatus.PENDING else started,
                # A finished phase's elapsed time is fixed; only the running one's moves with the clock.
                finished_at=started if status in PHASE_DONE else None,
            )
