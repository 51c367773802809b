"""Portal routes of clusters, included under /clusters/ in the portal's namespace (``portal:cluster…``)."""

from django.urls import path

from . import group_views, views

urlpatterns = [
    path("", views.cluster_list, name="clusters"),
    path("new/", views.cluster_new, name="cluster_new"),
    path("new/preflight/", views.cluster_preflight, name="cluster_preflight"),
    path("new/<slug:part>/", views.cluster_form_part, name="cluster_form_part"),
    path("activate/", views.cluster_activate, name="cluster_activate"),
    path("<uuid:cluster_id>/", views.cluster_detail, name="cluster"),
    path("<uuid:cluster_id>/zone/", views.cluster_change_zone, name="cluster_change_zone"),
    path("<uuid:cluster_id>/delete/", views.cluster_delete, name="cluster_delete"),
    # Instance groups and nodes (the groups and nodes tabs of the cluster page).
    path("<uuid:cluster_id>/groups/", group_views.group_table, name="cluster_groups"),
    path("<uuid:cluster_id>/groups/add/", group_views.group_add, name="cluster_group_add"),
    path("<uuid:cluster_id>/groups/form/<slug:part>/", group_views.group_form_part, name="cluster_group_form_part"),
    path("<uuid:cluster_id>/groups/<str:name>/scale/", group_views.group_scale, name="cluster_group_scale"),
    path("<uuid:cluster_id>/groups/<str:name>/delete/", group_views.group_delete, name="cluster_group_delete"),
    path("<uuid:cluster_id>/nodes/<str:node>/diagnosis/", group_views.node_diagnosis, name="cluster_node_diagnosis"),
    path("<uuid:cluster_id>/nodes/<str:node>/<slug:action>/", group_views.node_act, name="cluster_node_action"),
    path("<uuid:cluster_id>/diagnosis/", group_views.cluster_diagnosis, name="cluster_diagnosis"),
]
