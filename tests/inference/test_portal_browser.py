"""In a real browser: deploy an endpoint from the Inference page's form, watch it become ready, and chat
with it (the answer streams in through REST's invoke)."""

from __future__ import annotations

import pytest

from inference.models import Endpoint
from tests.browser import BROWSER_MARKS, open_page, screenshot

pytestmark = BROWSER_MARKS


@pytest.fixture
def page():
    yield from open_page(1280, 900)


def test_deploy_from_the_form_and_chat(live_server, sandbox, cluster, page, tmp_path):
    from playwright.sync_api import expect

    page.goto(f"{live_server.url}/endpoints/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text(f"Inference on {cluster.name}")
    expect(page.locator("#endpoint-rows")).to_contain_text("No endpoints on this cluster yet.")

    page.fill("#id_name", "web")
    page.fill("#id_model", "Qwen/Qwen3-0.6B")
    page.select_option("#id_instance_group", "gpu")
    page.fill("#id_replicas", "1")
    page.select_option("#id_service", "external")
    screenshot(page, "inference-form.png", tmp_path)
    page.click("#deploy-button")
    expect(page.locator("h1")).to_have_text("Endpoint web")
    expect(page.locator(".message.success")).to_contain_text("Deploying web")
    expect(page.locator("#operation-panel")).to_have_attribute("data-status", "succeeded", timeout=60_000)
    page.reload()
    expect(page.locator("#endpoint-status")).to_have_attribute("data-status", "ready", timeout=30_000)
    expect(page.locator("#endpoint-replicas")).to_have_text("1 / 1")
    expect(page.locator("#endpoint-url")).to_contain_text(".elb.us-west-2.amazonaws.com")
    expect(page.locator("table.events")).to_contain_text("Scheduled")

    # the chat's script is a file of the app (the portal's CSP allows no inline script)
    assert page.evaluate("[...document.scripts].every(s => s.src)")
    page.fill("#chat-input", "What is a GPU?")
    page.click("#chat-send")
    answer = page.locator(".chat-answer").first
    expect(answer).to_have_attribute("data-done", "true", timeout=30_000)
    expect(answer).to_contain_text("Qwen")  # the simulated server names its model
    screenshot(page, "inference-chat.png", tmp_path)

    page.goto(f"{live_server.url}/endpoints/{cluster.pk}/")
    expect(page.locator("tr[data-endpoint=web] .replicas")).to_have_text("1 / 1")
    assert Endpoint.objects.get(name="web").status == "ready"
