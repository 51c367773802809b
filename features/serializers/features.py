"""The features list and the PATCH body: only changed features, validated against the actual state."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from instantstart.operations.serializers import OperationSerializer

from ..catalog import CATALOG
from ..planning import resolve


@extend_schema_field(
    {
        "oneOf": [
            {"type": "boolean"},
            {"type": "object", "properties": {"enabled": {"type": "boolean"}}, "additionalProperties": True},
        ]
    }
)
class FeatureValueField(serializers.Field):
    """One feature of a PATCH body: ``true`` / ``false`` or ``{"enabled": bool, <setting>: value}``
    (described only; FeaturesUpdateSerializer validates it)."""

    def to_internal_value(self, data):
        return data

    def to_representation(self, value):
        return value


class FeatureSerializer(serializers.Serializer):
    """One feature or dependency, as it is now."""

    name = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.ChoiceField(choices=["feature", "dependency"])
    enabled = serializers.BooleanField(help_text="Actual state, read from AWS/Kubernetes now.")
    desired = serializers.BooleanField(help_text="What was last asked for (the actual state when never asked).")
    status = serializers.ChoiceField(choices=["enabled", "disabled", "enabling", "disabling", "failed", "degraded"])
    requires = serializers.ListField(child=serializers.CharField())
    required_by = serializers.ListField(child=serializers.CharField())
    settings = serializers.DictField()
    drift = serializers.BooleanField(help_text="Desired and actual differ while nothing is changing them.")
    detail = serializers.CharField(allow_blank=True)
    available = serializers.BooleanField(help_text="False when the cluster cannot have it (detail says why).")
    description = serializers.CharField()


class FeaturesSerializer(serializers.Serializer):
    features = FeatureSerializer(many=True)


class PlanActionSerializer(serializers.Serializer):
    feature = serializers.CharField()
    action = serializers.ChoiceField(choices=["enable", "disable", "update"])
    steps = serializers.ListField(child=serializers.CharField())


class FeaturesAcceptedSerializer(serializers.Serializer):
    changed = serializers.BooleanField()
    operation = OperationSerializer()
    plan = PlanActionSerializer(many=True)
    summary = serializers.CharField()


class FeaturesUpdateSerializer(serializers.Serializer):
    """``{"<feature>": true | false | {"enabled": bool, "<setting>": value}}`` with only changed features.

    Context: ``cluster``, ``state`` (the actual state, read once by the caller) and ``records``
    (desired rows by name). The validated data is ``{"request": {...}, "plan": Plan}``.
    """

    def to_internal_value(self, data):
        if not isinstance(data, dict) or not data:
            raise serializers.ValidationError({"non_field_errors": ["Send an object of the features to change."]})
        errors: dict[str, list[str]] = {}
        request: dict[str, dict] = {}
        for name, value in data.items():
            f = CATALOG.get(name)
            if f is None:
                errors[name] = [f"Unknown feature {name!r}. Features: {', '.join(CATALOG)}."]
                continue
            if isinstance(value, bool):
                value = {"enabled": value}
            if not isinstance(value, dict):
                errors[name] = ["Send true, false or an object {enabled, settings…}."]
                continue
            entry: dict = {"enabled": None, "settings": {}}
            for key, item in value.items():
                if key == "enabled":
                    if not isinstance(item, bool):
                        errors.setdefault(name, []).append("enabled must be true or false.")
                    entry["enabled"] = item
                    continue
                setting = f.setting(key)
                if setting is None:
                    allowed = ", ".join(s.name for s in f.settings) or "none"
                    errors.setdefault(name, []).append(f"Unknown setting {key!r} of {name} (settings: {allowed}).")
                    continue
                if isinstance(item, bool) or not isinstance(item, int):
                    errors.setdefault(name, []).append(f"{key} must be an integer.")
                elif not setting.minimum <= item <= setting.maximum:
                    errors.setdefault(name, []).append(
                        f"{key} must be between {setting.minimum} and {setting.maximum} (got {item})."
                    )
                else:
                    entry["settings"][key] = item
            request[name] = entry
        if errors:
            raise serializers.ValidationError(errors)
        return request

    def validate(self, request):
        plan, errors = resolve(self.context["cluster"], self.context["state"], self.context["records"], request)
        if errors:
            raise serializers.ValidationError(errors)
        return {"request": request, "plan": plan}
