"""REST of the features app: GET and PATCH /api/v1/clusters/{id}/features/ (features.py)."""
