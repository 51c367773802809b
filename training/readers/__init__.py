"""Read-only calls to AWS and Kubernetes for training: shared storage files, job state, logs, metrics."""
