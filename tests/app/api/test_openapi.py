"""The OpenAPI file describes exactly the /api/v1 routes, with their methods, and is valid OpenAPI 3.1."""

from __future__ import annotations

import re

import pytest
from openapi_spec_validator import validate

from tests.helpers.api_schema import spec

IGNORED_METHODS = {"HEAD", "OPTIONS"}


@pytest.fixture(scope="module")
def routes(tmp_path_factory) -> dict[str, set[str]]:
    """Every /api/v1 route as the OpenAPI file writes paths (``{retainer_id}``), with its methods."""
    from app import create_app

    tmp = tmp_path_factory.mktemp("openapi")
    app = create_app({"HOURTAB_DATA_DIR": str(tmp), "HOURTAB_DATABASE_URL": f"sqlite:///{tmp / 'unused.db'}",
                      "TESTING": True})
    found: dict[str, set[str]] = {}
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/v1/"):
            path = re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule)
            found.setdefault(path, set()).update(set(rule.methods or ()) - IGNORED_METHODS)
    app.extensions["hourtab.engine"].dispose()
    return found


def test_the_file_is_valid_openapi_3_1():
    assert spec()["openapi"].startswith("3.1")
    validate(spec())


def test_every_route_is_documented_and_every_documented_path_is_routed(routes):
    documented = {path: {m.upper() for m in ops if m in {"get", "post", "put", "patch", "delete"}}
                  for path, ops in spec()["paths"].items()}
    assert documented == routes
    assert {"/api/v1/retainers", "/api/v1/retainers/{retainer_id}/ledger", "/api/v1/imports",
            "/api/v1/jobs/{job_id}"} <= set(routes)


def test_path_parameters_are_the_routes_own():
    for path, operations in spec()["paths"].items():
        named = set(re.findall(r"\{(\w+)\}", path))
        for operation in operations.values():
            params = {p["name"] for p in operation.get("parameters", ()) if p["in"] == "path"}
            assert params == named, path


def test_the_documented_import_options_are_the_importers():
    from hourtab.timesheets.dateorder import DATE_ORDERS
    from hourtab.timesheets.detect import FORMAT_NAMES

    form = spec()["paths"]["/api/v1/imports"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert form["properties"]["format"]["enum"] == list(FORMAT_NAMES)
    assert form["properties"]["date_order"]["enum"] == list(DATE_ORDERS)
