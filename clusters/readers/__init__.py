"""Reads of AWS and Kubernetes outside operations: the catalog, preflight, nodes, diagnosis, drift,
importable clusters and storage to mount.

Readers never write (only ``steps/`` write to AWS/Kubernetes) and never change the database.
Every public reader is decorated with ``instantstart.errors.cloud_read``, so a cloud error leaves it
as a domain error (CloudUnavailable, CloudRefused), and a missing object or a state the request
cannot work in is ``NotFound`` / ``StateConflict``. Services, serializers and views call them;
steps may too (the engine classifies their cloud errors as it does the steps' own).
"""
