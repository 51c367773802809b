"""The phases of `features.update`: the only code of this app that writes to AWS and Kubernetes."""
