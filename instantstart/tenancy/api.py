"""REST: who am I, the team's settings, members and tokens."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.response import Response
from rest_framework.views import APIView

from instantstart.api.viewsets import TeamViewSet

from .models import ApiToken, Membership, Team
from .roles import Role
from .serializers import (
    ApiTokenCreateSerializer,
    ApiTokenSerializer,
    MembershipSerializer,
    TeamSerializer,
    WhoAmISerializer,
)
from .services import (
    add_member,
    change_member_role,
    create_token,
    remove_member,
    revoke_token,
    update_team,
)


def whoami_data(access) -> dict:
    return {
        "username": access.user.username,
        "team": access.team.slug,
        "team_name": access.team.name,
        "role": access.role,
        "via": access.via,
        "token": f"{access.token.name} ({access.token.prefix}…)" if access.token else None,
    }


class WhoAmIView(APIView):
    """The caller: user, team, role, and the token in use."""

    @extend_schema(responses=WhoAmISerializer)
    def get(self, request):
        return Response(whoami_data(request.auth))


class TeamSettingsViewSet(TeamViewSet):
    """The caller's team and its cloud settings. Admins change them."""

    queryset = Team.objects.all()
    serializer_class = TeamSerializer
    action_roles = {"partial_update": Role.ADMIN}

    def get_queryset(self):
        return Team.objects.filter(pk=self.access.team.pk)

    def retrieve(self, request):
        return Response(self.get_serializer(self.access.team).data)

    def partial_update(self, request):
        team = self.access.team
        serializer = self.get_serializer(team, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        team = update_team(access=self.access, team=team, changes=serializer.validated_data)
        return Response(self.get_serializer(team).data)


class MembershipViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    TeamViewSet,
):
    """The team's members and their roles. Admins manage them."""

    queryset = Membership.objects.select_related("user")
    serializer_class = MembershipSerializer
    default_write_role = Role.ADMIN
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "team": self.access.team}

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = add_member(access=self.access, user=data["user"], role=data["role"])

    def perform_update(self, serializer):
        serializer.instance = change_member_role(
            access=self.access,
            membership=serializer.instance,
            role=serializer.validated_data.get("role", serializer.instance.role),
        )

    def perform_destroy(self, instance):
        remove_member(access=self.access, membership=instance)


class ApiTokenViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, TeamViewSet):
    """The team's API tokens. Admins create and revoke them; a new token's secret is shown once."""

    queryset = ApiToken.objects.select_related("user")
    serializer_class = ApiTokenSerializer
    default_write_role = Role.ADMIN
    action_roles = {"list": Role.ADMIN, "retrieve": Role.ADMIN}
    idempotency_redact = ("token",)

    @extend_schema(
        request=ApiTokenCreateSerializer,
        responses={
            201: inline_serializer("NewToken", {"token": serializers.CharField(), "id": serializers.UUIDField()})
        },
    )
    def create(self, request):
        membership_role = (
            Membership.objects.visible_to(self.access).filter(user=request.user).values_list("role", flat=True).first()
        )
        serializer = ApiTokenCreateSerializer(data=request.data, context={"membership_role": membership_role})
        serializer.is_valid(raise_exception=True)
        token, raw = create_token(access=self.access, user=request.user, **serializer.validated_data)
        return Response({**ApiTokenSerializer(token).data, "token": raw}, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=ApiTokenSerializer)
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None):
        """Revoke the token now. Repeatable."""
        token = revoke_token(access=self.access, token=self.get_object())
        return Response(ApiTokenSerializer(token).data)

    @extend_schema(request=None, responses=ApiTokenSerializer)
    def destroy(self, request, pk=None):
        """Revoke the token (as `POST …/revoke/`) and answer it: a token is never removed, so the audit
        trail keeps naming it, and a GET afterwards shows the same token with `revoked_at` set."""
        token = revoke_token(access=self.access, token=self.get_object())
        return Response(ApiTokenSerializer(token).data)

    http_method_names = ["get", "post", "delete", "head", "options"]
