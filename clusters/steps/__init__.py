"""The phases of cluster operations: the only code of this app that WRITES to AWS and Kubernetes.

Reads that faces need outside operations live in ``readers/``; steps may use them too.
"""
