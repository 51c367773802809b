"""Portal routes of features, included under /clusters/ in the portal's namespace."""

from django.urls import path

from .views import panel

urlpatterns = [
    path("<uuid:cluster_id>/features/", panel.features_tab, name="cluster_features"),
    path("<uuid:cluster_id>/features/plan/", panel.features_plan, name="cluster_features_plan"),
    path("<uuid:cluster_id>/features/apply/", panel.features_apply, name="cluster_features_apply"),
]
