"""Portal routes of clusters, included under /clusters/ in the portal's namespace (``portal:cluster…``)."""

from django.urls import path

from .views import clusters, connect, groups, nodes, storage

urlpatterns = [
    path("", clusters.cluster_list, name="clusters"),
    path("new/", clusters.cluster_new, name="cluster_new"),
    path("new/preflight/", clusters.cluster_preflight, name="cluster_preflight"),
    path("new/<slug:part>/", clusters.cluster_form_part, name="cluster_form_part"),
    path("activate/", clusters.cluster_activate, name="cluster_activate"),
    path("<uuid:cluster_id>/", clusters.cluster_detail, name="cluster"),
    path("<uuid:cluster_id>/zone/", clusters.cluster_change_zone, name="cluster_change_zone"),
    path("<uuid:cluster_id>/delete/", clusters.cluster_delete, name="cluster_delete"),
    # Instance groups and nodes (the groups and nodes tabs of the cluster page).
    path("<uuid:cluster_id>/groups/", groups.group_table, name="cluster_groups"),
    path("<uuid:cluster_id>/groups/add/", groups.group_add, name="cluster_group_add"),
    path("<uuid:cluster_id>/groups/form/<slug:part>/", groups.group_form_part, name="cluster_group_form_part"),
    path("<uuid:cluster_id>/groups/<str:name>/scale/", groups.group_scale, name="cluster_group_scale"),
    path("<uuid:cluster_id>/groups/<str:name>/delete/", groups.group_delete, name="cluster_group_delete"),
    path("<uuid:cluster_id>/nodes/<str:node>/diagnosis/", nodes.node_diagnosis, name="cluster_node_diagnosis"),
    path("<uuid:cluster_id>/nodes/<str:node>/<slug:action>/", nodes.node_act, name="cluster_node_action"),
    path("<uuid:cluster_id>/diagnosis/", nodes.cluster_diagnosis, name="cluster_diagnosis"),
    # Storage (the storage tab) and how to connect (the overview's Connect box).
    path("<uuid:cluster_id>/storage/attach/", storage.storage_attach, name="cluster_storage_attach"),
    path("<uuid:cluster_id>/storage/<uuid:storage_id>/detach/", storage.storage_detach, name="cluster_storage_detach"),
    path("<uuid:cluster_id>/kubeconfig/", connect.cluster_kubeconfig, name="cluster_kubeconfig"),
]
