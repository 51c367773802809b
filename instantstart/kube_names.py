"""Kubernetes' rules for label keys, label values and taints (k8s.io/apimachinery/pkg/util/validation
and the kubelet's node-label restrictions), as the product checks them before anything reaches
HyperPod: a label Kubernetes refuses means a node that never registers.

Each function returns the list of what is wrong ([] when valid), in Kubernetes' words, so a
serializer can put every message at its field.
"""

from __future__ import annotations

import re

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
NAME_MAX, PREFIX_MAX, VALUE_MAX = 63, 253, 63

# Prefixes Kubernetes, EKS and HyperPod keep for themselves (the domain or any subdomain of it):
# a user's label there would fight what the kubelet or HyperPod's agents set on the node.
RESERVED_PREFIXES = ("kubernetes.io", "k8s.io", "sagemaker.amazonaws.com", "eks.amazonaws.com")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName', 'my.name' or '123-abc')"
)
_PREFIX_MSG = (
    "must be a lowercase RFC 1123 subdomain: lower case alphanumeric characters, '-' or '.', "
    "starting and ending with an alphanumeric character (e.g. 'example.com')"
)


def qualified_name_errors(key: str) -> list[str]:
    """apimachinery's IsQualifiedName: an optional DNS-subdomain prefix and '/', then a name."""
    parts = key.split("/")
    if len(parts) > 2:
        return ["a qualified name has at most one '/': an optional DNS subdomain prefix, then the name"]
    errors: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("the prefix before '/' must be non-empty")
        else:
            if len(prefix) > PREFIX_MAX:
                errors.append(f"the prefix must be no more than {PREFIX_MAX} characters")
            if not DNS1123_SUBDOMAIN.match(prefix):
                errors.append(f"the prefix {_PREFIX_MSG}")
    if not name:
        errors.append("the name must be non-empty")
        return errors
    if len(name) > NAME_MAX:
        errors.append(f"the name must be no more than {NAME_MAX} characters")
    if not _NAME.match(name):
        errors.append(f"the name {_NAME_MSG}")
    return errors


def reserved_prefix(key: str) -> str:
    """The reserved domain ``key``'s prefix falls under ("" when none)."""
    if "/" not in key:
        return ""
    prefix = key.split("/", 1)[0].lower()
    for domain in RESERVED_PREFIXES:
        if prefix == domain or prefix.endswith("." + domain):
            return domain
    return ""


def label_key_errors(key: str) -> list[str]:
    """A node label key (or taint key) a user may set: a qualified name outside the reserved prefixes."""
    errors = qualified_name_errors(key)
    if not errors and (domain := reserved_prefix(key)):
        errors.append(f"the prefix {domain}/ (and its subdomains) is reserved for Kubernetes, EKS and HyperPod")
    return errors


def label_value_errors(value: str, *, allow_empty: bool = True) -> list[str]:
    """apimachinery's IsValidLabelValue (HyperPod's API also refuses an empty value: ``allow_empty``)."""
    if not value:
        return [] if allow_empty else ["must be non-empty"]
    errors = []
    if len(value) > VALUE_MAX:
        errors.append(f"must be no more than {VALUE_MAX} characters")
    if not _VALUE.match(value):
        errors.append(_NAME_MSG)
    return errors
