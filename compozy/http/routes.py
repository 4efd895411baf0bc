"""Flask views generated from the operation table; the few routes that need more say why here.

Layer 6 (surface). A generated view parses the path parameters, the JSON body (when the operation
has a body spec) and the query into the operation's request object (an unknown query parameter is
refused), calls the façade method the table names with it, and answers with the status the table
gives the result's kind.
"""

from flask import Response, jsonify, request

from compozy.api import SECRET_HEADER, SESSION_HEADER
from compozy.http.guards import json_body, query_args
from compozy.http.slashes import restore
from compozy.http.sse import batches_as_pairs, sse_response, wants_stream
from compozy.serialize import Export, JSONText
from compozy.validate import query_int


def parsed(operation, params):
    """This request as the operation's request object: the one check of its body and query."""
    return operation.parse(params, json_body() if operation.body is not None else None, query_args())


def call(manager, operation, params):
    """The façade call the table describes, with this request parsed."""
    extras = {}
    if SESSION_HEADER in operation.headers:
        extras["identity"] = (request.headers.get(SESSION_HEADER), request.headers.get(SECRET_HEADER))
    return getattr(manager, operation.facade)(parsed(operation, params), **extras)


def prompt(manager, operation, params):
    if wants_stream(request):
        prompt_request = parsed(operation, params)
        return sse_response(lambda: manager.prompt_stream(prompt_request))
    return call(manager, operation, params)


def list_sessions(manager, operation, params):
    # Encoded: a page is joined from each row's stored JSON text, not decoded and encoded again.
    return manager.list_sessions(parsed(operation, params), encoded=True)


def resume_point(query_after):
    """Where a stream resumes: Last-Event-ID when sent, else the query's after_sequence."""
    header = request.headers.get("Last-Event-ID")
    return query_int(header, "Last-Event-ID") if header else query_after


def stream(manager, operation, params):
    stream_request = parsed(operation, params)
    after = resume_point(stream_request.after_sequence)
    return sse_response(lambda: batches_as_pairs(manager.stream(after_sequence=after, **stream_request.path)))


def catalog_stream(manager, operation, params):
    after = resume_point(parsed(operation, params).after_sequence)
    return sse_response(lambda: batches_as_pairs(manager.catalog_stream(after_sequence=after)))


def attention_stream(manager, operation, params):
    parsed(operation, params)  # it takes no query: any parameter is refused
    after = resume_point(None)
    return sse_response(lambda: batches_as_pairs(manager.attention_stream(after_sequence=after)))


def fixed(document):
    """The handler of an operation that answers the same document to every (parsed) request."""
    def handler(_manager, operation, params):
        parsed(operation, params)
        return document
    return handler


SPECIAL = {"session.prompt": prompt, "session.list": list_sessions, "session.stream": stream,
           "session.catalog_stream": catalog_stream, "attention.stream": attention_stream}


def view(manager, operation, handler=None):
    handler = handler or SPECIAL.get(operation.name, call)

    def handle(**params):
        return respond(operation, handler(manager, operation, restore(params)))
    handle.__name__ = operation.name
    return handle


def quoted_string(text):
    """An HTTP quoted-string (RFC 9110): backslash and double quote escaped, control characters and
    anything beyond Latin-1 (a header cannot carry it) replaced."""
    text = "".join(c if " " <= c <= "~" or "\xa0" <= c <= "\xff" else "?" for c in str(text))
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def respond(operation, result):
    if isinstance(result, Response):
        return result
    status = operation.status_for(getattr(result, "kind", None))
    if isinstance(result, Export):
        return Response(result.text, status=status, content_type=result.media_type,
                        headers={"Content-Disposition": f'attachment; filename="{result.filename}"'})
    if status == 204:
        warning = result.get("warning")
        headers = {"Deprecation": "true", "Warning": f'299 compozy {quoted_string(warning)}'} if warning else {}
        response = Response(status=204, headers=headers)
        del response.headers["Content-Type"]  # no body, so no media type
        return response
    if isinstance(result, JSONText):
        return Response(result, status=status, mimetype="application/json")
    return jsonify(result), status
