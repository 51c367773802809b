"""Security headers every answer carries (settings: MIDDLEWARE), beyond Django's own
(X-Frame-Options DENY, Referrer-Policy, nosniff, HSTS in production — see settings).

Content-Security-Policy: the portal's templates load scripts and styles from the app only, with
no inline script or style; the two inline ``onchange="this.form.submit()"`` handlers of the
switchers are allowed by their hash ('unsafe-hashes' permits exactly that handler, not inline
script in general), and so is htmx's indicator style. Django's admin and Swagger UI inject styles
of their own, so /admin/ and /api/v1/docs/ alone allow inline styles (never inline script).
"""

from __future__ import annotations

import base64
import hashlib

# The inline event handlers the templates use, allowed one by one (a new one needs its hash here).
INLINE_HANDLERS = ("this.form.submit()",)
# The <style> element htmx adds for its request indicators (htmx.config.includeIndicatorStyles),
# allowed by its hash; a new htmx version changes it (tests/hardening/test_csp_browser.py tells).
HTMX_INDICATOR_STYLE = "'sha256-faU7yAF8NxuMTNEwVmBz+VcYeIoBQ2EMHW3WaVxCvnk='"
# Third-party pages that inject styles of their own: Django's admin and Swagger UI (/api/v1/docs/).
INLINE_STYLE_PATHS = ("/admin/", "/api/v1/docs/")


def _hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode() + "'"


_COMMON = {
    "default-src": "'self'",
    "img-src": "'self' data:",
    "font-src": "'self'",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}
PORTAL_POLICY = {
    **_COMMON,
    "script-src": " ".join(["'self'", "'unsafe-hashes'", *map(_hash, INLINE_HANDLERS)]),
    "style-src": f"'self' {HTMX_INDICATOR_STYLE}",
}
ADMIN_POLICY = {**_COMMON, "script-src": "'self'", "style-src": "'self' 'unsafe-inline'"}


def header(policy: dict[str, str]) -> str:
    return "; ".join(f"{directive} {sources}" for directive, sources in policy.items())


PORTAL_CSP, ADMIN_CSP = header(PORTAL_POLICY), header(ADMIN_POLICY)


class SecurityHeadersMiddleware:
    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        csp = ADMIN_CSP if request.path.startswith(INLINE_STYLE_PATHS) else PORTAL_CSP
        response.headers.setdefault("Content-Security-Policy", csp)
        return response
