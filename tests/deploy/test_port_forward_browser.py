"""Through an SSM port-forwarding session the portal is http://localhost:3099 in the operator's browser:
production's Secure cookies still work there (browsers hold localhost secure), so the first login
succeeds with the stack's settings — production mode with only the HTTPS redirect off."""

from __future__ import annotations

import pytest

from tests.browser import BROWSER_MARKS, open_page, screenshot
from tests.deploy.processes import Process, container_env, free_port, image_cmd, wait_healthy

pytestmark = BROWSER_MARKS


@pytest.fixture
def browser_page():
    yield from open_page(1280, 860)


@pytest.mark.timeout(240)
def test_the_first_login_works_over_the_port_forward_with_secure_cookies(tmp_path, browser_page):
    from playwright.sync_api import expect

    port = free_port()
    password = tmp_path / "admin_password"
    password.write_text("port-forward-first-login")
    # The stack's container environment (deploy/cloudformation/management.yaml, app.env).
    env = container_env(
        INSTANTSTART_VAR_DIR=str(tmp_path / "data"),
        HOST="127.0.0.1",
        PORT=str(port),
        SECURE_SSL_REDIRECT="false",
        INSTANTSTART_ADMIN_PASSWORD_FILE=str(password),
    )
    app = Process("allinone", image_cmd(), env, tmp_path)
    try:
        wait_healthy(port, app)
        page = browser_page
        page.goto(f"http://localhost:{port}/")
        assert "/login/" in page.url
        page.fill("#id_username", "admin")
        page.fill("#id_password", password.read_text())
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/login/" not in url)
        cookies = {c["name"]: c for c in page.context.cookies()}
        assert cookies["sessionid"]["secure"] and cookies["sessionid"]["httpOnly"]
        assert cookies["csrftoken"]["secure"]
        page.goto(f"http://localhost:{port}/admin/")
        expect(page.locator("#site-name")).to_be_visible()  # still logged in on the next request
        screenshot(page, "port-forward-admin.png", tmp_path)
    finally:
        assert app.stop() == 0, app.log()[-3000:]
