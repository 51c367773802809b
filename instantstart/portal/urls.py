from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import views

app_name = "portal"

urlpatterns = [
    path(
        "login/",
        auth_views.LoginView.as_view(template_name="portal/login.html", redirect_authenticated_user=True),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", views.PasswordChange.as_view(), name="password_change"),
    path("", views.dashboard, name="dashboard"),
    path("team/switch/", views.switch_team, name="switch_team"),
    path("clusters/", include("clusters.portal_urls")),
    path("clusters/", include("features.portal_urls")),
    path("jobs/", include("training.portal_urls")),
    path("endpoints/", include("inference.portal_urls")),
    path("operations/", views.operation_list, name="operations"),
    path("operations/<uuid:op_id>/", views.operation_detail, name="operation"),
    path("operations/<uuid:op_id>/retry/", views.operation_retry, name="operation_retry"),
    path("operations/<uuid:op_id>/cancel/", views.operation_cancel, name="operation_cancel"),
    path("audit/", views.audit_list, name="audit"),
    path("approvals/", include("agent_tools.portal_urls")),
    path("team/", views.team_page, name="team"),
    path("team/settings/", views.team_settings, name="team_settings"),
    path("team/members/", views.member_add, name="member_add"),
    path("team/members/<int:membership_id>/role/", views.member_role, name="member_role"),
    path("team/members/<int:membership_id>/remove/", views.member_remove, name="member_remove"),
    path("team/tokens/", views.token_create, name="token_create"),
    path("team/tokens/<uuid:token_id>/revoke/", views.token_revoke, name="token_revoke"),
]
