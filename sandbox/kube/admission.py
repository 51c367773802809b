"""Defaulting and validation done by kube-apiserver before an object is stored.

Only what a user of the product would notice: DNS-1123 names, required fields of the
workload kinds, immutable fields, the defaults that clients read back (pod restartPolicy,
Service clusterIP, Job selector/labels, ...), and schema validation + pruning of custom objects.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from .errors import ApiError, cause, invalid
from .names import DNS1123_LABEL, DNS1123_SUBDOMAIN, label_value_errors, qualified_name_errors
from .quantity import is_quantity
from .schema import apply_defaults, prune
from .util import clone

if TYPE_CHECKING:
    from .resources import ResourceType
    from .store import Cluster

Obj = dict[str, Any]

# kinds whose names must be DNS-1123 labels (they become DNS names / hostnames)
LABEL_NAMED = {"Namespace", "Service", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"}


def _name_causes(kind: str, name: str) -> list[dict[str, str]]:
    if kind in LABEL_NAMED:
        if len(name) > 63 or not DNS1123_LABEL.match(name):
            return [
                cause(
                    "metadata.name",
                    f'Invalid value: "{name}": a lowercase RFC 1123 label must consist '
                    "of lower case alphanumeric characters or '-', and must start and end with an "
                    "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation "
                    "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                )
            ]
    elif kind in ("Event", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"):
        return []
    elif len(name) > 253 or not DNS1123_SUBDOMAIN.match(name):
        return [
            cause(
                "metadata.name",
                f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist '
                "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            )
        ]
    return []


def _q(v: Any) -> str:
    """A value as Go's field.Invalid prints it (strings quoted)."""
    return json.dumps(v) if isinstance(v, str) else str(v)


def labels_causes(labels: Any, path: str) -> list[dict[str, str]]:
    """ValidateLabels: every key a qualified name, every value a valid label value."""
    if not isinstance(labels, dict):
        return []
    out = []
    for k, v in labels.items():
        for msg in qualified_name_errors(str(k)):
            out.append(cause(path, f"Invalid value: {_q(k)}: {msg}"))
        if not isinstance(v, str):
            out.append(cause(path, f"Invalid value: {_q(v)}: must be a string"))
            continue
        for msg in label_value_errors(v):
            out.append(cause(path, f"Invalid value: {_q(v)}: {msg}"))
    return out


def _label_causes(meta: Obj) -> list[dict[str, str]]:
    out = labels_causes(meta.get("labels") or {}, "metadata.labels")
    # ValidateAnnotations: keys are qualified names (checked lower-cased), values are free
    for k in meta.get("annotations") or {}:
        for msg in qualified_name_errors(str(k).lower()):
            out.append(cause("metadata.annotations", f"Invalid value: {_q(k)}: {msg}"))
    return out


TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def taints_causes(taints: Any, path: str = "spec.taints") -> list[dict[str, str]]:
    """validateNodeTaints: key a qualified name, value a label value, a known effect, unique by
    key and effect."""
    if not isinstance(taints, list):
        return []
    out = []
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(taints):
        p = f"{path}[{i}]"
        if not isinstance(t, dict):
            out.append(cause(p, "Invalid value: must be an object"))
            continue
        key, value, effect = str(t.get("key") or ""), t.get("value") or "", t.get("effect") or ""
        for msg in qualified_name_errors(key):
            out.append(cause(f"{p}.key", f"Invalid value: {_q(key)}: {msg}"))
        errs = label_value_errors(str(value))
        if errs:
            out.append(cause(f"{p}.value", f"Invalid value: {_q(value)}: {';'.join(errs)}"))
        if not effect:
            out.append(cause(f"{p}.effect", "Required value", "FieldValueRequired"))
        elif effect not in TAINT_EFFECTS:
            out.append(
                cause(
                    f"{p}.effect",
                    f'Unsupported value: {_q(effect)}: supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"',
                    "FieldValueNotSupported",
                )
            )
        if (key, effect) in seen:
            out.append(cause(p, "Duplicate value: taints must be unique by key and effect pair", "FieldValueDuplicate"))
        seen.add((key, effect))
    return out


def default_class(c: Cluster) -> str | None:
    """The DefaultStorageClass admission plugin: the class a claim that names none gets."""
    for sc in c.list("storage.k8s.io/storageclasses"):
        if (sc["metadata"].get("annotations") or {}).get("storageclass.kubernetes.io/is-default-class") == "true":
            return sc["metadata"]["name"]
    return None


# ------------------------------------------------------------------ pods


def default_pod_spec(spec: Obj, restart: str = "Always") -> None:
    spec.setdefault("restartPolicy", restart)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if not isinstance(c, dict):
            continue
        img = str(c.get("image", ""))
        c.setdefault(
            "imagePullPolicy", "Always" if img.endswith(":latest") or ":" not in img.split("/")[-1] else "IfNotPresent"
        )
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("resources", {})
        res = c["resources"]
        if isinstance(res, dict):
            _quantities_to_strings(res)
        # extended resources (GPUs, EFA) given only as limits are requests too
        if isinstance(res, dict) and res.get("limits") and not res.get("requests"):
            res["requests"] = dict(res["limits"])
        for p in c.get("ports") or []:
            if isinstance(p, dict):
                p.setdefault("protocol", "TCP")


def _quantities_to_strings(res: Obj) -> None:
    """The apiserver serializes resource.Quantity as a string ("1", not 1); clients rely on it."""
    for kind in ("requests", "limits"):
        vals = res.get(kind)
        if isinstance(vals, dict):
            for k, v in vals.items():
                if isinstance(v, int | float) and not isinstance(v, bool):
                    vals[k] = str(v)


def _pod_spec_causes(spec: Any, path: str) -> list[dict[str, str]]:
    if not isinstance(spec, dict):
        return [cause(path, "Required value", "FieldValueRequired")]
    out = []
    containers = spec.get("containers")
    if not containers:
        out.append(cause(f"{path}.containers", "Required value", "FieldValueRequired"))
    names = set()
    for i, c in enumerate(containers or []):
        p = f"{path}.containers[{i}]"
        if not isinstance(c, dict):
            out.append(cause(p, "Invalid value: must be an object"))
            continue
        n = c.get("name")
        if not n:
            out.append(cause(f"{p}.name", "Required value", "FieldValueRequired"))
        elif not DNS1123_LABEL.match(str(n)):
            out.append(
                cause(
                    f"{p}.name",
                    f'Invalid value: "{n}": a lowercase RFC 1123 label must consist of '
                    "lower case alphanumeric characters or '-'",
                )
            )
        elif n in names:
            out.append(cause(f"{p}.name", f'Duplicate value: "{n}"', "FieldValueDuplicate"))
        names.add(n)
        if not c.get("image"):
            out.append(cause(f"{p}.image", "Required value", "FieldValueRequired"))
        for kind in ("requests", "limits"):
            for rk, rv in ((c.get("resources") or {}).get(kind) or {}).items():
                if not is_quantity(rv):
                    out.append(cause(f"{p}.resources.{kind}[{rk}]", f'Invalid value: "{rv}": must be a quantity'))
    rp = spec.get("restartPolicy")
    if rp is not None and rp not in ("Always", "OnFailure", "Never"):
        out.append(
            cause(
                f"{path}.restartPolicy",
                f'Unsupported value: "{rp}": supported values: "Always", "OnFailure", "Never"',
                "FieldValueNotSupported",
            )
        )
    return out


def pod_template_hash(template: Obj) -> str:
    raw = repr(sorted(_flatten(template)))
    return hashlib.sha1(raw.encode()).hexdigest()[:10].translate(str.maketrans("0123456789abcdef", "bcdfghjklmnpqrst"))


def _flatten(o: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(o, dict):
        out = []
        for k, v in o.items():
            out.extend(_flatten(v, f"{prefix}.{k}"))
        return out
    if isinstance(o, list):
        out = []
        for i, v in enumerate(o):
            out.extend(_flatten(v, f"{prefix}[{i}]"))
        return out
    return [(prefix, repr(o))]


def _qos(spec: Obj) -> str:
    any_set = False
    guaranteed = True
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        if req or lim:
            any_set = True
        if not (lim.get("cpu") and lim.get("memory")) or any(req.get(k, lim.get(k)) != lim.get(k) for k in lim):
            guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


# ------------------------------------------------------------------ per kind


def _selector_template_causes(obj: Obj, path: str = "spec") -> list[dict[str, str]]:
    from .selectors import match_label_selector_obj

    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [cause("spec", "Required value", "FieldValueRequired")]
    out = []
    sel = spec.get("selector")
    if not sel or not (sel.get("matchLabels") or sel.get("matchExpressions")):
        out.append(cause(f"{path}.selector", "Required value", "FieldValueRequired"))
    tpl = spec.get("template")
    if not isinstance(tpl, dict):
        out.append(cause(f"{path}.template", "Required value", "FieldValueRequired"))
        return out
    labels = (tpl.get("metadata") or {}).get("labels") or {}
    out.extend(labels_causes(labels, f"{path}.template.metadata.labels"))
    if sel and (sel.get("matchLabels") or sel.get("matchExpressions")) and not match_label_selector_obj(sel, labels):
        out.append(
            cause(
                f"{path}.template.metadata.labels",
                f"Invalid value: {labels}: `selector` does not match template `labels`",
            )
        )
    out.extend(_pod_spec_causes(tpl.get("spec"), f"{path}.template.spec"))
    return out


# Go ints without omitempty: a fresh object already carries them as 0 (the client models require them)
INITIAL_STATUS: dict[str, Obj] = {
    "DaemonSet": {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0},
    "ReplicaSet": {"replicas": 0},
    "StatefulSet": {"replicas": 0, "availableReplicas": 0},
    "HorizontalPodAutoscaler": {"currentReplicas": 0, "desiredReplicas": 0},
}


def admit(c: Cluster, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
    meta = obj["metadata"]
    if old is None and not rt.crd and rt.kind in INITIAL_STATUS and not obj.get("status"):
        obj["status"] = clone(INITIAL_STATUS[rt.kind])
    name = meta.get("name", "")
    causes: list[dict[str, str]] = []
    if old is None:
        causes += _name_causes(rt.kind, name)
    causes += _label_causes(meta)
    ann_size = sum(len(k) + len(str(v)) for k, v in (meta.get("annotations") or {}).items())
    if ann_size > 262144:
        # why `kubectl apply` of a big CRD needs --server-side (last-applied-configuration is too long)
        causes.append(cause("metadata.annotations", "Too long: may not be more than 262144 bytes", "FieldValueTooLong"))
    kind = rt.kind if not rt.crd else None
    spec = obj.get("spec")

    if kind == "Pod":
        if isinstance(spec, dict):
            default_pod_spec(spec)
            spec.setdefault("serviceAccountName", "default")
            spec.setdefault("serviceAccount", spec["serviceAccountName"])
            spec.setdefault("enableServiceLinks", True)
            spec.setdefault("priority", 0)
        causes += _pod_spec_causes(spec, "spec")
        if old is None and not causes:
            obj.setdefault("status", {"phase": "Pending", "qosClass": _qos(spec)})
        if old is not None and isinstance(spec, dict):
            # pod spec is immutable except images, tolerations additions and the scheduler's binding
            o_spec = clone(old.get("spec") or {})
            n_spec = clone(spec)
            for s in (o_spec, n_spec):
                for ct in s.get("containers") or []:
                    ct.pop("image", None)
                s.pop("nodeName", None)
                s.pop("tolerations", None)
                s.pop("activeDeadlineSeconds", None)
            if o_spec != n_spec:
                causes.append(
                    cause(
                        "spec",
                        "Forbidden: pod updates may not change fields other than "
                        "`spec.containers[*].image`, `spec.initContainers[*].image`, "
                        "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to "
                        "existing tolerations) or `spec.terminationGracePeriodSeconds`",
                        "FieldValueForbidden",
                    )
                )
    elif kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        if isinstance(spec, dict):
            if kind != "DaemonSet":
                spec.setdefault("replicas", 1)
            spec.setdefault("revisionHistoryLimit", 10)
            if kind == "Deployment":
                spec.setdefault(
                    "strategy", {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
                )
                spec.setdefault("progressDeadlineSeconds", 600)
            if kind == "StatefulSet":
                spec.setdefault("podManagementPolicy", "OrderedReady")
                spec.setdefault("serviceName", "")
            if isinstance(spec.get("template"), dict) and isinstance(spec["template"].get("spec"), dict):
                default_pod_spec(spec["template"]["spec"])
        causes += _selector_template_causes(obj)
        if isinstance(spec, dict) and isinstance(spec.get("replicas"), int) and spec["replicas"] < 0:
            causes.append(
                cause("spec.replicas", f"Invalid value: {spec['replicas']}: must be greater than or equal to 0")
            )
        if old is not None and (old.get("spec") or {}).get("selector") != (spec or {}).get("selector"):
            causes.append(cause("spec.selector", f"Invalid value: {(spec or {}).get('selector')}: field is immutable"))
    elif kind == "Job":
        causes += _admit_job(obj, old)
    elif kind == "CronJob":
        if not isinstance(spec, dict) or not spec.get("schedule"):
            causes.append(cause("spec.schedule", "Required value", "FieldValueRequired"))
    elif kind == "Service":
        causes += _admit_service(c, obj, old)
    elif kind == "Node":
        if isinstance(spec, dict):
            causes += taints_causes(spec.get("taints"))
    elif kind == "Namespace":
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = name
        obj.setdefault("spec", {"finalizers": ["kubernetes"]})
        if old is None:
            obj["status"] = {"phase": "Active"}
    elif kind == "ConfigMap" or kind == "Secret":
        for k in list(obj.get("data") or {}) + list(obj.get("stringData") or {}):
            if not re.match(r"^[-._a-zA-Z0-9]+$", k):
                causes.append(
                    cause(
                        f"data[{k}]",
                        f'Invalid value: "{k}": a valid config key must consist of '
                        "alphanumeric characters, '-', '_' or '.'",
                    )
                )
        if kind == "Secret":
            import base64

            obj.setdefault("type", "Opaque")
            for k, v in (obj.pop("stringData", None) or {}).items():
                obj.setdefault("data", {})[k] = base64.b64encode(str(v).encode()).decode()
    elif kind == "PersistentVolumeClaim":
        if isinstance(spec, dict) and isinstance(spec.get("resources"), dict):
            _quantities_to_strings(spec["resources"])
        if old is None:
            obj["status"] = {"phase": "Pending"}
            if isinstance(spec, dict) and "storageClassName" not in spec:
                default = default_class(c)
                if default:
                    spec["storageClassName"] = default
            if isinstance(spec, dict):
                spec.setdefault("volumeMode", "Filesystem")
    elif kind == "PersistentVolume":
        if isinstance(spec, dict):
            spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
            spec.setdefault("volumeMode", "Filesystem")
        if old is None:
            obj["status"] = {"phase": "Pending"}
    elif kind == "CustomResourceDefinition":
        causes += _admit_crd(obj, old)
    elif rt.crd:
        causes += _admit_custom(c, rt, obj)

    if causes:
        raise invalid(rt.group, rt.kind, name, causes)


def _admit_job(obj: Obj, old: Obj | None) -> list[dict[str, str]]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [cause("spec", "Required value", "FieldValueRequired")]
    out = []
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    if "completions" not in spec:
        spec["completions"] = 1
    tpl = spec.get("template")
    if not isinstance(tpl, dict):
        return [cause("spec.template", "Required value", "FieldValueRequired")]
    tspec = tpl.get("spec")
    if isinstance(tspec, dict):
        rp = tspec.get("restartPolicy")
        if rp not in ("Never", "OnFailure"):
            out.append(
                cause(
                    "spec.template.spec.restartPolicy",
                    'Required value: valid values: "OnFailure", "Never"'
                    if rp is None
                    else f'Unsupported value: "{rp}": supported values: "OnFailure", "Never"',
                    "FieldValueRequired" if rp is None else "FieldValueNotSupported",
                )
            )
        default_pod_spec(tspec, restart=rp or "Never")
    out += _pod_spec_causes(tspec, "spec.template.spec")
    out += labels_causes((tpl.get("metadata") or {}).get("labels"), "spec.template.metadata.labels")
    if old is None:
        uid = obj["metadata"]["uid"]
        name = obj["metadata"]["name"]
        labels = tpl.setdefault("metadata", {}).setdefault("labels", {})
        labels.setdefault("job-name", name)
        labels.setdefault("batch.kubernetes.io/job-name", name)
        if not spec.get("manualSelector"):
            labels["batch.kubernetes.io/controller-uid"] = uid
            labels["controller-uid"] = uid
            spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    elif (old.get("spec") or {}).get("template") != spec.get("template"):
        out.append(cause("spec.template", "Invalid value: field is immutable"))
    return out


def _admit_service(c: Cluster, obj: Obj, old: Obj | None) -> list[dict[str, str]]:
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return [cause("spec", "Invalid value: must be an object")]
    out = []
    stype = spec.setdefault("type", "ClusterIP")
    if stype not in ("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"):
        out.append(
            cause(
                "spec.type",
                f'Unsupported value: "{stype}": supported values: "ClusterIP", '
                '"ExternalName", "LoadBalancer", "NodePort"',
                "FieldValueNotSupported",
            )
        )
    spec.setdefault("sessionAffinity", "None")
    ports = spec.get("ports") or []
    if not ports and stype != "ExternalName" and spec.get("clusterIP") != "None":
        out.append(cause("spec.ports", "Required value", "FieldValueRequired"))
    for i, p in enumerate(ports):
        if not isinstance(p, dict) or not isinstance(p.get("port"), int):
            out.append(cause(f"spec.ports[{i}].port", "Required value", "FieldValueRequired"))
            continue
        p.setdefault("protocol", "TCP")
        p.setdefault("targetPort", p["port"])
        if stype in ("NodePort", "LoadBalancer") and "nodePort" not in p:
            p["nodePort"] = 30000 + (c.counter("nodeport") % 2768)
    if old is not None:
        o = old.get("spec") or {}
        if spec.get("clusterIP") and o.get("clusterIP") and spec["clusterIP"] != o["clusterIP"]:
            out.append(cause("spec.clusterIPs[0]", "Invalid value: field is immutable"))
        spec.setdefault("clusterIP", o.get("clusterIP"))
        spec.setdefault("clusterIPs", o.get("clusterIPs"))
    elif stype != "ExternalName" and not spec.get("clusterIP"):
        n = c.counter("clusterip")
        ip = f"10.100.{(n // 250) % 250}.{n % 250 + 2}"
        spec["clusterIP"] = ip
        spec["clusterIPs"] = [ip]
    elif spec.get("clusterIP"):
        spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")
    if old is None:
        obj["status"] = {"loadBalancer": {}}
    return out


def _admit_crd(obj: Obj, old: Obj | None) -> list[dict[str, str]]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [cause("spec", "Required value", "FieldValueRequired")]
    out = []
    names = spec.get("names") or {}
    for f in ("plural", "kind"):
        if not names.get(f):
            out.append(cause(f"spec.names.{f}", "Required value", "FieldValueRequired"))
    if not spec.get("group"):
        out.append(cause("spec.group", "Required value", "FieldValueRequired"))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        out.append(
            cause(
                "spec.scope",
                f'Unsupported value: "{spec.get("scope")}": supported values: "Cluster", "Namespaced"',
                "FieldValueNotSupported",
            )
        )
    versions = spec.get("versions") or []
    if not versions:
        out.append(cause("spec.versions", "Invalid value: must have exactly one version marked as storage version"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        out.append(cause("spec.versions", "Invalid value: must have exactly one version marked as storage version"))
    want = f"{names.get('plural')}.{spec.get('group')}"
    if obj["metadata"].get("name") != want:
        out.append(
            cause(
                "metadata.name",
                f'Invalid value: "{obj["metadata"].get("name")}": must be spec.names.plural+"."+spec.group',
            )
        )
    if old is not None and (old.get("spec") or {}).get("scope") != spec.get("scope"):
        out.append(cause("spec.scope", "Invalid value: field is immutable"))
    return out


def _admit_custom(c: Cluster, rt: ResourceType, obj: Obj) -> list[dict[str, str]]:
    v = c.validator(rt)
    if v is None:
        return []
    apply_defaults(obj, v.openapi)
    removed: list[str] = []
    prune(obj, v.openapi, root=True, removed=removed)
    if removed and c.field_validation == "Strict":
        # what `kubectl apply` (fieldValidation=Strict) gets for a field the schema does not declare
        raise ApiError(
            400,
            "BadRequest",
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            "strict decoding error: " + ", ".join(f'unknown field "{r}"' for r in removed),
        )
    return v.errors(obj)


# ------------------------------------------------------------------ hooks after store


def after_create(c: Cluster, rt: ResourceType, obj: Obj) -> None:
    """Work the apiserver / core controllers do right after a create."""
    if rt.kind == "Namespace" and not rt.crd:
        sa = c.type_by_gr("/serviceaccounts")
        cm = c.type_by_gr("/configmaps")
        name = obj["metadata"]["name"]
        if sa and c.get("/serviceaccounts", name, "default") is None:
            c.create(sa, {"metadata": {"name": "default", "namespace": name}}, name)
        if cm and c.get("/configmaps", name, "kube-root-ca.crt") is None:
            c.create(
                cm,
                {
                    "metadata": {"name": "kube-root-ca.crt", "namespace": name},
                    "data": {"ca.crt": "-----BEGIN CERTIFICATE-----\nsandbox\n-----END CERTIFICATE-----\n"},
                },
                name,
            )


def on_pod_deleted(c: Cluster, pod: Obj) -> None:
    status = pod.get("status") or {}
    if status.get("phase") == "Running":
        for ct in (pod.get("spec") or {}).get("containers") or []:
            c.record_event(pod, "Killing", f"Stopping container {ct.get('name')}")
