"""The base URL of links a client follows from outside the page (the Atom feed's)."""

from __future__ import annotations

from flask import Flask, current_app, request


def public_base() -> str:
    """``HOURTAB_PUBLIC_URL`` when it is set, else the scheme and host this request came to.

    Behind a proxy, the request's host is the proxy's only when ``HOURTAB_TRUSTED_PROXIES`` lets
    ProxyFix read the forwarded headers; setting the URL is the dependable way.
    """
    if current_app.config.get("PUBLIC_URL_SET"):
        return current_app.config["PUBLIC_URL"]
    return request.host_url.rstrip("/")


def startup_warnings(app: Flask) -> list[str]:
    """What a production start should warn about in the configuration."""
    warnings = []
    if not app.config.get("PUBLIC_URL_SET"):
        warnings.append("HOURTAB_PUBLIC_URL is not set: feed links use the host of each request, and the CLI "
                        f"prints links to {app.config['PUBLIC_URL']}. Set it to the address clients use.")
    return warnings
