"""AWS sessions per team: the only door to AWS.

A team's calls run with credentials from assuming the team's role: in AWS, the role ARN and
external ID of its settings; in the sandbox, the InstantStartControlPlane role of the team's own
emulated account, through the sandbox endpoint, with the team's external ID when it set one (the
sandbox enforces the role's trust policy as AWS does). The code that uses the clients is the same.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import time
import urllib.request
from dataclasses import dataclass

import boto3
from botocore.config import Config
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from instantstart.tenancy.models import Cloud, Team

log = logging.getLogger(__name__)

ROLE_NAME = "InstantStartControlPlane"
# Assumed-role credentials are reused until this long before they expire.
_REFRESH_MARGIN_SECONDS = 300
_BOTO_CONFIG = Config(retries={"mode": "standard", "max_attempts": 3}, connect_timeout=10, read_timeout=60)

_lock = threading.Lock()
_cache: dict[tuple, tuple[float, dict]] = {}


@dataclass(frozen=True)
class TeamCloud:
    """Where and as whom a team's AWS calls go."""

    team_id: str
    region: str
    endpoint_url: str | None
    credentials: dict
    account_id: str

    def client(self, service: str, region: str | None = None):
        """A client with the team's credentials (cached: clients are thread-safe and costly to build)."""
        return _client(
            service,
            region or self.region,
            self.endpoint_url,
            self.credentials["AccessKeyId"],
            self.credentials["SecretAccessKey"],
            self.credentials["SessionToken"],
        )

    def session(self, region: str | None = None) -> boto3.session.Session:
        return boto3.session.Session(
            aws_access_key_id=self.credentials["AccessKeyId"],
            aws_secret_access_key=self.credentials["SecretAccessKey"],
            aws_session_token=self.credentials["SessionToken"],
            region_name=region or self.region,
        )


_shared_session_lock = threading.Lock()
_shared_session: boto3.session.Session | None = None


@functools.lru_cache(maxsize=512)
def _client(service: str, region: str, endpoint: str | None, key: str, secret: str, token: str):
    with _shared_session_lock:  # creating clients from one session is not thread-safe; using them is
        return _models_session().client(
            service,
            region_name=region,
            endpoint_url=endpoint,
            aws_access_key_id=key,
            aws_secret_access_key=secret,
            aws_session_token=token,
            config=_BOTO_CONFIG,
        )


def _models_session() -> boto3.session.Session:
    global _shared_session
    if _shared_session is None:
        _shared_session = boto3.session.Session()
    return _shared_session


def sandbox_endpoint() -> str:
    endpoint = settings.SANDBOX_AWS_ENDPOINT
    if not endpoint:
        raise ImproperlyConfigured(
            "This team uses the sandbox but SANDBOX_AWS_ENDPOINT is not set: start InstantStart with "
            "`make run`, or run `python -m sandbox` and export the aws_endpoint it prints."
        )
    return endpoint


def role_for(team: Team) -> tuple[str, str | None, str | None]:
    """(role ARN, external ID, endpoint) that the team's calls go through."""
    if team.cloud == Cloud.SANDBOX:
        role = f"arn:aws:iam::{team.sandbox_account_id}:role/{ROLE_NAME}"
        return role, team.aws_external_id or None, sandbox_endpoint()
    return team.aws_role_arn, team.aws_external_id or None, None


def deploy_sandbox_role(team: Team) -> None:
    """A sandbox team's role, redeployed with the team's (new) external ID in its trust policy.

    In AWS the platform engineer deploys deploy/instantstart-role.yaml with the ExternalId the team
    settings carry; in the sandbox nobody else can, so the control plane does it when the setting
    changes. The sandbox deploys the role by itself on the first AssumeRole into an account, with
    the external ID that call presents."""
    if team.cloud != Cloud.SANDBOX or not settings.SANDBOX_AWS_ENDPOINT:
        return
    url = f"{settings.SANDBOX_AWS_ENDPOINT}/_sandbox/accounts/{team.sandbox_account_id}/control-plane-role"
    body = json.dumps({"external_id": team.aws_external_id or None}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10):
            pass
    except OSError:
        # the setting is saved; AssumeRole then answers AccessDenied until the role is redeployed
        log.warning("could not redeploy the sandbox role of team %s with its external ID", team.slug, exc_info=True)
    forget_credentials(team)


def team_cloud(team: Team, region: str | None = None) -> TeamCloud:
    """Credentials for the team's role (assumed now or reused from cache) and its endpoint."""
    region = region or team.default_region
    role_arn, external_id, endpoint = role_for(team)
    key = (str(team.pk), role_arn, external_id, endpoint)
    with _lock:
        cached = _cache.get(key)
    if cached is None or cached[0] - time.time() < _REFRESH_MARGIN_SECONDS:
        if endpoint:
            # The sandbox's STS accepts any caller; the assumed role decides the account.
            base = boto3.session.Session(
                aws_access_key_id="sandbox", aws_secret_access_key="sandbox", region_name=region
            )
        else:
            base = boto3.session.Session(region_name=region)  # the control plane's own identity
        kwargs = {"RoleArn": role_arn, "RoleSessionName": f"instantstart-{team.slug}"[:64], "DurationSeconds": 3600}
        if external_id:
            kwargs["ExternalId"] = external_id
        credentials = base.client("sts", endpoint_url=endpoint, config=_BOTO_CONFIG).assume_role(**kwargs)[
            "Credentials"
        ]
        expires = (
            credentials["Expiration"].timestamp()
            if hasattr(credentials["Expiration"], "timestamp")
            else (time.time() + 3600)
        )
        cached = (expires, credentials)
        with _lock:
            _cache[key] = cached
    account_id = role_arn.split(":")[4]
    return TeamCloud(str(team.pk), region, endpoint, cached[1], account_id)


def forget_credentials(team: Team | None = None) -> None:
    """Drop cached credentials (after a team's role changes, or in tests)."""
    with _lock:
        if team is None:
            _cache.clear()
            _client.cache_clear()
        else:
            for key in [k for k in _cache if k[0] == str(team.pk)]:
                del _cache[key]
