"""Portal routes of clusters, included under /clusters/ in the portal's namespace (``portal:cluster…``)."""

from django.urls import path

from . import views

urlpatterns = [
    path("", views.cluster_list, name="clusters"),
    path("new/", views.cluster_new, name="cluster_new"),
    path("new/preflight/", views.cluster_preflight, name="cluster_preflight"),
    path("new/<slug:part>/", views.cluster_form_part, name="cluster_form_part"),
    path("activate/", views.cluster_activate, name="cluster_activate"),
    path("<uuid:cluster_id>/", views.cluster_detail, name="cluster"),
    path("<uuid:cluster_id>/zone/", views.cluster_change_zone, name="cluster_change_zone"),
    path("<uuid:cluster_id>/delete/", views.cluster_delete, name="cluster_delete"),
]
