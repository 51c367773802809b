"""Operations pages: list with filters, detail with its progress panel, retry and cancel."""

from __future__ import annotations

import pytest
from django.urls import reverse

from instantstart.operations.models import AuditEvent, Operation, OperationStatus, PhaseStatus
from tests.factories import OperationFactory

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def detail_url(op) -> str:
    return reverse("portal:operation", kwargs={"op_id": op.pk})


class TestList:
    def test_lists_only_the_current_teams_operations(self, viewer_client, running_op, other_team_op):
        response = viewer_client.get(reverse("portal:operations"))
        assert response.status_code == 200
        assert list(response.context["page"].object_list) == [running_op]
        assert detail_url(running_op) in response.content.decode()
        assert detail_url(other_team_op) not in response.content.decode()

    def test_filters_by_status_and_kind(self, viewer_client, team, running_op, failed_op):
        url = reverse("portal:operations")
        assert list(viewer_client.get(url, {"status": "failed"}).context["page"].object_list) == [failed_op]
        assert list(viewer_client.get(url, {"status": "", "kind": "engine.selftest"}).context["page"]) == [
            failed_op,
            running_op,
        ]
        assert list(viewer_client.get(url, {"kind": "cluster.create"}).context["page"].object_list) == []

    def test_filters_by_target(self, viewer_client, team, running_op):
        targeted = OperationFactory(team=team, status=OperationStatus.SUCCEEDED, target_id="c-123", target_repr="gpu-a")
        response = viewer_client.get(reverse("portal:operations"), {"target": "c-123"})
        assert list(response.context["page"].object_list) == [targeted]
        assert 'name="target" value="c-123"' in response.content.decode()

    def test_a_bad_filter_is_reported_not_a_crash(self, viewer_client, running_op):
        response = viewer_client.get(reverse("portal:operations"), {"status": "exploded"})
        assert response.status_code == 200
        assert b"filter ignored" in response.content
        assert list(response.context["page"].object_list) == [running_op]

    def test_paginates_and_keeps_filters(self, viewer_client, team):
        for _ in range(27):
            OperationFactory(team=team, status=OperationStatus.SUCCEEDED)
        first = viewer_client.get(reverse("portal:operations"), {"status": "succeeded"})
        assert len(first.context["page"].object_list) == 25
        assert "?status=succeeded&amp;page=2" in first.content.decode()
        second = viewer_client.get(reverse("portal:operations"), {"status": "succeeded", "page": 2})
        assert len(second.context["page"].object_list) == 2

    def test_empty_state(self, viewer_client):
        assert b"No operations yet" in viewer_client.get(reverse("portal:operations")).content


class TestDetail:
    def test_shows_phases_and_polls_while_running(self, viewer_client, running_op):
        response = viewer_client.get(detail_url(running_op))
        html = response.content.decode()
        assert response.status_code == 200
        assert "<html" in html and 'id="operation-panel"' in html
        for title in ("Create a simulated resource", "Wait for it", "Finish"):
            assert title in html
        assert "wait message" in html
        assert 'hx-trigger="every 2s"' in html
        assert f'hx-get="{detail_url(running_op)}"' in html

    def test_another_teams_operation_is_404(self, admin_client, other_team_op):
        assert admin_client.get(detail_url(other_team_op)).status_code == 404
        assert admin_client.get(detail_url(other_team_op), **HTMX).status_code == 404

    def test_htmx_request_gets_only_the_panel(self, viewer_client, running_op):
        response = viewer_client.get(detail_url(running_op), **HTMX)
        html = response.content.decode()
        assert html.lstrip().startswith('<section class="module panel" id="operation-panel"')
        assert "<html" not in html and "sidenav" not in html
        assert 'hx-trigger="every 2s"' in html

    def test_boosted_htmx_request_gets_the_full_page(self, viewer_client, running_op):
        response = viewer_client.get(detail_url(running_op), HTTP_HX_REQUEST="true", HTTP_HX_BOOSTED="true")
        assert "<html" in response.content.decode()

    def test_terminal_panel_stops_polling(self, viewer_client, running_op):
        Operation.objects.filter(pk=running_op.pk).update(status=OperationStatus.SUCCEEDED)
        html = viewer_client.get(detail_url(running_op), **HTMX).content.decode()
        assert "hx-trigger" not in html and "hx-get" not in html
        assert "Succeeded" in html

    def test_failed_operation_shows_error_and_hint(self, member_client, failed_op):
        html = member_client.get(detail_url(failed_op)).content.decode()
        assert "SimulatedFailure" in html and "simulated failure in wait" in html
        assert "Hint: Set fixed=true and retry." in html
        assert "Retry from where it stopped" in html
        assert "Cancel operation" not in html

    def test_running_operation_offers_cancel_to_members(self, member_client, running_op):
        html = member_client.get(detail_url(running_op)).content.decode()
        assert "Cancel operation" in html and "Retry" not in html

    def test_viewers_see_no_buttons(self, viewer_client, failed_op, running_op):
        assert "Retry from where it stopped" not in viewer_client.get(detail_url(failed_op)).content.decode()
        assert "Cancel operation" not in viewer_client.get(detail_url(running_op)).content.decode()


class TestActions:
    def test_member_retries_a_failed_operation(
        self, member_client, failed_op, no_enqueue, django_capture_on_commit_callbacks
    ):
        with django_capture_on_commit_callbacks(execute=True):
            response = member_client.post(reverse("portal:operation_retry", kwargs={"op_id": failed_op.pk}))
        assert response.status_code == 302 and response["Location"] == detail_url(failed_op)
        failed_op.refresh_from_db()
        assert failed_op.status == OperationStatus.RUNNING and failed_op.error_code == ""
        assert list(failed_op.phases.values_list("status", flat=True)) == ["succeeded", "pending", "pending"]
        assert AuditEvent.objects.filter(action="operation.retry", operation=failed_op, via="ui").exists()
        assert no_enqueue == [failed_op.pk]
        assert "Retrying" in member_client.get(response["Location"]).content.decode()

    def test_member_cancels_a_running_operation(self, member_client, running_op, no_enqueue):
        response = member_client.post(reverse("portal:operation_cancel", kwargs={"op_id": running_op.pk}))
        assert response.status_code == 302
        running_op.refresh_from_db()
        assert running_op.cancel_requested
        page = member_client.get(detail_url(running_op)).content.decode()
        assert "Cancel requested" in page and "cancel requested, stopping" in page
        assert "Cancel operation" not in page

    def test_retry_of_a_running_operation_is_an_error_message(self, member_client, running_op, no_enqueue):
        response = member_client.post(reverse("portal:operation_retry", kwargs={"op_id": running_op.pk}), follow=True)
        assert "Only failed or cancelled operations can be retried" in response.content.decode()
        running_op.refresh_from_db()
        assert running_op.status == OperationStatus.RUNNING

    def test_viewer_cannot_retry_or_cancel(self, viewer_client, failed_op, running_op, no_enqueue):
        retry = viewer_client.post(reverse("portal:operation_retry", kwargs={"op_id": failed_op.pk}))
        cancel = viewer_client.post(reverse("portal:operation_cancel", kwargs={"op_id": running_op.pk}))
        assert retry.status_code == 403 and cancel.status_code == 403
        assert b"needs the member role" in retry.content
        failed_op.refresh_from_db()
        running_op.refresh_from_db()
        assert failed_op.status == OperationStatus.FAILED and not running_op.cancel_requested
        assert no_enqueue == []

    def test_another_teams_operation_cannot_be_touched(self, admin_client, other_team_op, no_enqueue):
        for action in ("portal:operation_retry", "portal:operation_cancel"):
            assert admin_client.post(reverse(action, kwargs={"op_id": other_team_op.pk})).status_code == 404
        other_team_op.refresh_from_db()
        assert other_team_op.status == OperationStatus.FAILED

    def test_actions_are_post_only(self, member_client, failed_op):
        assert member_client.get(reverse("portal:operation_retry", kwargs={"op_id": failed_op.pk})).status_code == 405


def test_pending_operation_elapsed_is_a_dash(viewer_client, team):
    op = OperationFactory(team=team, status=OperationStatus.PENDING)
    html = viewer_client.get(detail_url(op), **HTMX).content.decode()
    assert "elapsed —" in html
    assert PhaseStatus.PENDING.label in html


def test_the_kind_filter_hides_internal_kinds(viewer_client, team):
    from tests.factories import OperationFactory

    OperationFactory(team=team)  # an engine.selftest
    page = viewer_client.get("/operations/").content.decode()
    assert 'value="engine.selftest"' not in page and 'value="cluster.create"' in page
