"""The in-cluster Prometheus of the sandbox: a pod running the Prometheus image scrapes what its
prometheus.yml (from the ConfigMap it mounts) describes and answers the HTTP query API with a
PromQL subset (promql-parser parses; `promql.Evaluator` evaluates). See sandbox/kube/README.md."""
