"""Deployment: CloudFormation templates, the container image, compose, and the IAM action list
generated from the code (`python -m deploy.iam`)."""
