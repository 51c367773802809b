"""REST of the clusters app: thin DRF viewsets — serializer → service (or reader) → response.

clusters.py   the team's clusters (and ClusterChildMixin, the parent of every nested resource)
catalog.py    check before create: zones, instance types, training plans; preflight
groups.py     a cluster's instance groups
nodes.py      a cluster's nodes, remediation and read-only diagnosis
storage.py    a cluster's storage

Rules live below: input rules in ``serializers/``, state rules in ``services.py``; domain errors
they raise propagate to ``instantstart.api.errors``, the one place REST (and MCP) answers them.
Every action documents its query, body and answers in ``extend_schema``: the MCP tools read their
arguments and output schema from there.
"""
