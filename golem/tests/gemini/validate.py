"""Validates Gemini request and response bodies against the google-genai SDK's types.

Reads lines on stdin, each a JSON array of {"kind": "request" | "response", "body": {...}},
and answers each with one line: a JSON array of what is wrong (empty when every body
validates). One process serves a whole test binary, so the SDK is imported once. The SDK's models
forbid unknown fields (extra="forbid") and take the API's camelCase names, so a field the
API does not have, or a value of the wrong shape, fails here as it would at Google.
"""

import json
import sys

from pydantic import TypeAdapter, ValidationError
from google.genai import types

# The fields of a generateContent request body (GenerateContentRequest in the REST reference),
# each with the SDK type of its value.
REQUEST = {
    "contents": TypeAdapter(list[types.Content]),
    "systemInstruction": TypeAdapter(types.Content),
    "tools": TypeAdapter(list[types.Tool]),
    "toolConfig": TypeAdapter(types.ToolConfig),
    "generationConfig": TypeAdapter(types.GenerationConfig),
    "safetySettings": TypeAdapter(list[types.SafetySetting]),
    "cachedContent": TypeAdapter(str),
}


# Keys the SDK's Schema type takes (for Vertex AI) but the Gemini API's dialect refuses.
NOT_IN_DIALECT = {"additionalProperties", "$ref", "ref", "$defs", "defs", "definitions", "$schema", "const", "oneOf"}


def check_dialect(schema, where):
    """The schemas golem sends in Gemini's dialect: no references, no closed objects,
    upper-case types."""
    errors = []
    if isinstance(schema, dict):
        for key in NOT_IN_DIALECT & schema.keys():
            errors.append(f"{where}: `{key}` is not in Gemini's schema dialect")
        kind = schema.get("type")
        if kind is not None and (not isinstance(kind, str) or kind != kind.upper()):
            errors.append(f"{where}: type {kind!r} is not one of Gemini's upper-case types")
        for name, child in schema.get("properties", {}).items():
            errors += check_dialect(child, f"{where}.properties.{name}")
        if "items" in schema:
            errors += check_dialect(schema["items"], f"{where}.items")
        for index, child in enumerate(schema.get("anyOf", [])):
            errors += check_dialect(child, f"{where}.anyOf[{index}]")
    return errors


def check_request(body):
    errors = []
    if not isinstance(body, dict):
        return ["the body is not an object"]
    if "contents" not in body:
        errors.append("`contents` is missing")
    for key, value in body.items():
        adapter = REQUEST.get(key)
        if adapter is None:
            errors.append(f"`{key}` is no field of a generateContent request")
            continue
        try:
            adapter.validate_python(value)
        except ValidationError as error:
            errors.append(f"`{key}`: {error}")
    for tool in body.get("tools", []):
        for declaration in tool.get("functionDeclarations", []):
            if "parameters" in declaration:
                errors += check_dialect(declaration["parameters"], f"{declaration['name']}.parameters")
    schema = body.get("generationConfig", {}).get("responseSchema")
    if schema is not None:
        errors += check_dialect(schema, "responseSchema")
    for content in body.get("contents", []):
        if content.get("role") not in ("user", "model"):
            errors.append(f"a content's role is {content.get('role')!r}")
    return errors


def check_response(body):
    try:
        types.GenerateContentResponse.model_validate(body)
    except ValidationError as error:
        return [str(error)]
    return []


def main():
    for line in sys.stdin:
        errors = []
        for index, item in enumerate(json.loads(line)):
            check = check_request if item["kind"] == "request" else check_response
            errors += [f"{item['kind']} {index}: {error}" for error in check(item["body"])]
        print(json.dumps(errors), flush=True)


main()
