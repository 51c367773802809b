"""What the node endpoints answer: a node as HyperPod and Kubernetes see it, and diagnosis reports.

Answers only (nodes are read from the cloud, never written through a serializer); the viewsets
name them in ``extend_schema(responses=…)``, so the REST docs and the MCP tools' output schemas
describe exactly what ``readers.nodes`` and ``readers.diagnosis`` return.
"""

from __future__ import annotations

from rest_framework import serializers

from ..readers.nodes import HEALTH_VALUES


class PodSerializer(serializers.Serializer):
    namespace = serializers.CharField()
    name = serializers.CharField()
    phase = serializers.CharField(allow_null=True)
    restarts = serializers.IntegerField()
    waiting_reason = serializers.CharField(allow_null=True)


class NodeSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The Kubernetes node name (hyperpod-i-…).")
    instance_id = serializers.CharField()
    instance_group = serializers.CharField()
    instance_type = serializers.CharField()
    availability_zone = serializers.CharField(allow_null=True)
    status = serializers.CharField(help_text="HyperPod's instance status (Running, Pending, …).")
    status_message = serializers.CharField()
    registered = serializers.BooleanField(help_text="The instance joined Kubernetes.")
    ready = serializers.BooleanField()
    schedulable = serializers.BooleanField()
    health = serializers.ChoiceField(choices=HEALTH_VALUES, help_text="HyperPod's health label.")
    deep_health_check = serializers.CharField(allow_null=True)
    fault_types = serializers.CharField(allow_null=True)
    fault_reason = serializers.CharField(allow_null=True)
    allocatable = serializers.DictField()
    pods = PodSerializer(many=True)


class NodeListSerializer(serializers.Serializer):
    results = NodeSerializer(many=True)


class FindingSerializer(serializers.Serializer):
    severity = serializers.ChoiceField(choices=["info", "warning", "error"])
    check = serializers.CharField()
    message = serializers.CharField()


class EventSerializer(serializers.Serializer):
    time = serializers.CharField()
    level = serializers.CharField(allow_null=True)
    description = serializers.CharField(allow_null=True)
    instance_id = serializers.CharField(allow_null=True)
    instance_group = serializers.CharField(allow_null=True)


class SuggestedActionSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=["investigate", "reboot", "replace"])
    why = serializers.CharField()
    tool = serializers.CharField(allow_null=True, help_text="The tool that carries the action out.")


class NodeDiagnosisSerializer(serializers.Serializer):
    node = serializers.CharField()
    instance_id = serializers.CharField()
    healthy = serializers.BooleanField()
    findings = FindingSerializer(many=True)
    recent_events = EventSerializer(many=True)
    suggested_actions = SuggestedActionSerializer(many=True, help_text="In escalation order.")
    workloads_on_node = serializers.ListField(child=serializers.CharField())


class NodeCountSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    unhealthy = serializers.IntegerField()


class ClusterDiagnosisSerializer(serializers.Serializer):
    cluster = serializers.CharField()
    status = serializers.CharField(help_text="The HyperPod cluster's status.")
    healthy = serializers.BooleanField()
    nodes = NodeCountSerializer()
    findings = FindingSerializer(many=True)
    unhealthy_nodes = NodeDiagnosisSerializer(many=True)
    recent_events = EventSerializer(many=True)
