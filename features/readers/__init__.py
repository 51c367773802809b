"""Read-only calls to AWS and Kubernetes: the ACTUAL state of a cluster's features (state.py)."""
