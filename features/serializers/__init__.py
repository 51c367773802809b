"""All input validation of the features app (REST, MCP and the portal use the same serializers)."""

from .features import (
    FeaturesAcceptedSerializer,
    FeatureSerializer,
    FeaturesSerializer,
    FeaturesUpdateSerializer,
    FeatureValueField,
)

__all__ = [
    "FeatureValueField",
    "FeatureSerializer",
    "FeaturesAcceptedSerializer",
    "FeaturesSerializer",
    "FeaturesUpdateSerializer",
]
