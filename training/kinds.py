"""Operation kinds of the training app."""
