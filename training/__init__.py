"""Training jobs from recipes: HyperPodPyTorchJob / RayJob manifests, status, logs and MLflow metrics."""
