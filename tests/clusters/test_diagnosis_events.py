"""Diagnosis events as a person reads them: "3 min ago" with the full time on hover, and an instance
id shown once (not after a description that already names it, nor on a node's own report)."""

from __future__ import annotations

from datetime import timedelta

from django.template.loader import render_to_string
from django.utils import timezone


def events_html(report: dict) -> str:
    html = render_to_string("clusters/_diagnosis.html", {"report": {"healthy": False, "findings": [], **report}})
    return html[html.index("Recent events") :]


def test_event_times_are_human_with_the_full_time_on_hover():
    at = timezone.now() - timedelta(minutes=3, seconds=5)
    html = events_html(
        {"recent_events": [{"time": at.isoformat(), "level": "Warning", "description": "Node rebooted"}]}
    )
    assert ">3 min ago</time>" in html and f'title="{at.strftime("%Y-%m-%d %H:%M:%S")} UTC"' in html


def test_an_instance_id_is_not_repeated():
    event = {"time": timezone.now().isoformat(), "description": "Instance i-0abc failed health checks",
             "instance_id": "i-0abc"}  # fmt: skip
    assert events_html({"recent_events": [event]}).count("i-0abc") == 1
    other = {**event, "description": "Health check failed"}
    assert events_html({"recent_events": [other]}).count("i-0abc") == 1  # the cluster report names it
    assert events_html({"recent_events": [other], "instance_id": "i-0abc"}).count("i-0abc") == 0
