"""Portal pages of the features app: the cluster page's "Advanced features" tab (panel.py)."""
