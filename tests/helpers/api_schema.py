"""The API's OpenAPI file, and its response schemas as JSON Schema validators (OpenAPI 3.1 is 2020-12)."""

from __future__ import annotations

from functools import cache
from importlib.resources import files

import yaml
from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry
from referencing.jsonschema import DRAFT202012

SPEC_URI = "urn:hourtab:openapi"


@cache
def spec() -> dict:
    return yaml.safe_load(files("app.api").joinpath("openapi.yaml").read_text(encoding="utf-8"))


def _pointer(*parts: str) -> str:
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def response_validator(path: str, method: str, status: int, media: str = "application/json"):
    """A validator of the body the file documents for ``method path`` answering ``status``."""
    operation = spec()["paths"][path][method.lower()]
    response = operation["responses"][str(status)]
    if "$ref" in response:  # a shared response under components
        ref = response["$ref"].removeprefix("#/")
        target = f"{SPEC_URI}#/{ref}/content/{_pointer(media)}/schema"
    else:
        target = f"{SPEC_URI}#/{_pointer('paths', path, method.lower(), 'responses', str(status), 'content', media, 'schema')}"
    registry = Registry().with_resource(SPEC_URI, DRAFT202012.create_resource(spec()))
    return Draft202012Validator({"$ref": target}, registry=registry, format_checker=FormatChecker())


def check(response, path: str, status: int | None = None) -> dict:
    """Assert that a real response has the status and the body the file documents; return the body."""
    status = status or response.status_code
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    errors = sorted(response_validator(path, response.request.method, status).iter_errors(body), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
    return body
