"""Portal routes of approvals, included under /approvals/ in the portal's namespace (``portal:approval…``)."""

from django.urls import path

from . import portal_views

urlpatterns = [
    path("", portal_views.approval_list, name="approvals"),
    path("<uuid:approval_id>/approve/", portal_views.approval_approve, name="approval_approve"),
    path("<uuid:approval_id>/reject/", portal_views.approval_reject, name="approval_reject"),
]
