"""Read-only calls to the cluster's Kubernetes API for endpoints and downloads (they never mutate)."""
