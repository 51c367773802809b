"""In a real browser: submit a job from the Training form, watch its logs arrive live over the socket,
and see the loss chart drawn from MLflow. Served by the real ASGI application (websockets included)."""

from __future__ import annotations

import pytest

from tests.browser import BROWSER_MARKS, open_page, screenshot
from training.models import Job

from .helpers import upload

pytestmark = BROWSER_MARKS


@pytest.fixture
def browser_page():
    yield from open_page(1280, 1000)


def test_submit_from_the_form_watch_logs_live_and_see_the_loss_chart(
    cluster, admin_api, asgi, settings, browser_page, tmp_path
):
    from playwright.sync_api import expect

    settings.TRAINING_POD_ANNOTATIONS = {"sandbox.instantstart.io/run-seconds": "5000"}
    upload(admin_api, cluster, "scripts/train.py", b"print('train')\n")
    page = browser_page
    page.goto(f"{asgi.url}/login/?next=/jobs/{cluster.pk}/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_contain_text("Training on train")
    page.fill("input[name=name]", "browser-job")
    page.fill("input[name=script]", "/s3/scripts/train.py")
    page.fill("input[name=args]", "--max_steps 300")
    page.click("details summary")
    page.uncheck("input[name=hang_detection]")  # the sandbox's seconds are too short for a 10-minute rule
    page.click("text=Preflight")
    expect(page.locator("#preflight")).to_contain_text("Ready to submit")
    screenshot(page, "training-form.png", tmp_path)
    page.click("button:has-text('Submit job')")
    expect(page.locator("h1")).to_contain_text("browser-job")
    job = Job.objects.get(name="browser-job")
    view = page.locator("#log-view")
    expect(view).to_contain_text("Loss:", timeout=60_000)
    # Live: lines arrived while the job was still running, without a reload.
    page.evaluate("window.__sameDocument = true")
    first = int(page.locator("#log-count").inner_text().split()[0])
    expect(page.locator("#log-count")).not_to_have_text(f"{first} lines", timeout=30_000)
    assert Job.objects.get(pk=job.pk).status in ("pending", "running")
    expect(page.locator("#charts")).to_have_attribute("data-loss", __import__("re").compile(r"\d+"), timeout=60_000)
    assert page.evaluate("window.__sameDocument === true")
    screenshot(page, "training-job.png", tmp_path)
    # The pod filter and search narrow the view.
    page.fill("#log-search", "Loss:")
    assert all("Loss:" in line for line in view.inner_text().strip().splitlines())
