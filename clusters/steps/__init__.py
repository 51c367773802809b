"""The phases of cluster operations: the only code of this app that calls AWS and Kubernetes."""
