"""Portal routes of inference, included under /endpoints/ in the portal's namespace."""

from django.urls import path

from .views import endpoints

urlpatterns = [
    path("", endpoints.endpoints_home, name="endpoints"),
    path("<uuid:cluster_id>/", endpoints.inference_page, name="inference"),
    path("<uuid:cluster_id>/models/", endpoints.models_page, name="inference_models"),
    path("<uuid:cluster_id>/<str:name>/", endpoints.endpoint_page, name="endpoint"),
    path("<uuid:cluster_id>/<str:name>/scale/", endpoints.endpoint_scale, name="endpoint_scale"),
    path("<uuid:cluster_id>/<str:name>/delete/", endpoints.endpoint_delete, name="endpoint_delete"),
]
