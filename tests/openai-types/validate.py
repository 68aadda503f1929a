"""Validates Responses API JSON against the `openai` SDK's types.

    validate.py FILE

FILE holds {"requests": [...], "responses": [...], "events": [...]}: request bodies are
checked as `ResponseCreateParamsNonStreaming` (or `...Streaming` with `"stream": true`),
with every TypedDict of the SDK refusing keys it does not declare; responses as
`Response`; stream events as `ResponseStreamEvent`. Prints what it checked; exits 1,
naming each item that does not fit and why, when any does not.
"""

import importlib
import json
import pkgutil
import sys
import typing

from pydantic import ConfigDict, TypeAdapter, ValidationError
from typing_extensions import is_typeddict

import openai.types

# The SDK's TypedDicts allow undeclared keys by default; a key golem invents must fail.
for info in pkgutil.walk_packages(openai.types.__path__, "openai.types."):
    module = importlib.import_module(info.name)
    for value in vars(module).values():
        if is_typeddict(value) and value.__module__.startswith("openai."):
            value.__pydantic_config__ = ConfigDict(extra="forbid")

from openai.types.responses import Response, ResponseStreamEvent  # noqa: E402
from openai.types.responses.response_create_params import (  # noqa: E402
    ResponseCreateParamsNonStreaming,
    ResponseCreateParamsStreaming,
)

whole = TypeAdapter(ResponseCreateParamsNonStreaming)
streamed = TypeAdapter(ResponseCreateParamsStreaming)


def members(union):
    """The classes of a (possibly annotated) union."""
    args = typing.get_args(union)
    if args and typing.get_origin(union) is typing.Annotated:
        return members(args[0])
    return args


# Each event type by its `type`, so an event that does not fit says why in its own terms
# rather than in those of every member of the union.
EVENTS = {
    typing.get_args(cls.model_fields["type"].annotation)[0]: cls
    for cls in members(ResponseStreamEvent)
}


def validate_event(value):
    cls = EVENTS.get(value.get("type"))
    if cls is None:
        raise ValueError(f"no event type {value.get('type')!r}")
    cls.model_validate(value)


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as file:
        items = json.load(file)
    failures = []

    def check(kind, index, validate, value):
        try:
            validate(value)
        except (ValidationError, ValueError) as error:
            failures.append(f"{kind}[{index}]: {error}")

    for index, body in enumerate(items.get("requests", [])):
        adapter = streamed if body.get("stream") else whole
        check("request", index, adapter.validate_python, body)
    for index, body in enumerate(items.get("responses", [])):
        check("response", index, Response.model_validate, body)
    for index, body in enumerate(items.get("events", [])):
        check("event", index, validate_event, body)
    for failure in failures:
        print(failure, file=sys.stderr)
    counts = {kind: len(items.get(kind, [])) for kind in ("requests", "responses", "events")}
    print(
        f"{counts['requests']} requests, {counts['responses']} responses, "
        f"{counts['events']} events checked; {len(failures)} did not fit"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
