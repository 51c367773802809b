"""The phases of the training operations: the only code here that writes to AWS and Kubernetes."""
