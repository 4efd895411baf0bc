"""An agent's question in a terminal (`session attach`): its choices, or a free form filled field by field.

Layer 6 (surface). A question (ACP form elicitation) arrives as a permission event whose action is
`question`. One to choose (one field of choices, or yes/no) offers an option per choice and decline, answered
like a permission request, by number or name. A free form offers `accept`, which takes the form's fields as
content (session approve --content), and decline: attach asks for each field the form's schema names in
turn (text, a number or yes/no, its default taken by an empty line) and sends them together.
"""

from compozy.cli.output import colour, readable
from compozy.cli.render import option_label, options_of

YES, NO = ("y", "yes", "true", "1"), ("n", "no", "false", "0")
KIND_WORDS = {"string": "text", "number": "a number", "integer": "a whole number", "boolean": "yes/no"}


def is_question(content):
    return content.get("action") == "question"


def takes_form(content):
    """A free form: the question's `accept` option takes the form's fields (compozy.acp.requests.question_options)."""
    return is_question(content) and any(o["option_id"] == "accept" and o.get("kind") == "accept"
                                        for o in options_of(content))


def question_prompt(content):
    """The question and how to answer it: its choices numbered, or its form filled in below."""
    content = readable(content)
    message = (content.get("question") or {}).get("message") or content.get("title") or "a question"
    if takes_form(content):
        return colour(f"\n[question] {message}  (answer each field below; /decline declines)", err=True, bold=True)
    choices = "  ".join(f"{n}) {option_label(o)}" for n, o in enumerate(options_of(content), 1))
    return colour(f"\n[question] {message}: {choices}  (type a number or a name)", err=True, bold=True)


class Form:
    """The fields of a free form, asked one at a time: each line typed is the current field's value."""

    def __init__(self, schema):
        schema = schema if isinstance(schema, dict) else {}
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        self.fields = [(str(name), spec if isinstance(spec, dict) else {}) for name, spec in properties.items()]
        self.required = set(schema.get("required") or []) if isinstance(schema.get("required"), list) else set()
        self.restart()

    def restart(self):
        """Ask every field again (the answer was refused)."""
        self.values: dict = {}
        self.index = 0

    @property
    def done(self):
        return self.index >= len(self.fields)

    def ask(self):
        """The current field's prompt: its title, what it takes, its choices or default, whether it is optional."""
        name, spec = self.fields[self.index]
        kind = spec.get("type")
        words = "one of " + ", ".join(str(v) for v in spec["enum"]) if isinstance(spec.get("enum"), list) \
            else KIND_WORDS.get(kind, "text")
        if "default" in spec:
            words += f"; empty for {_shown(spec['default'])}"
        elif name not in self.required:
            words += "; empty to leave out"
        description = f" - {spec['description']}" if isinstance(spec.get("description"), str) else ""
        return readable(f"  {spec.get('title') or name}{description} ({words}): ")

    def take(self, typed):
        """Take a typed value for the current field; the reason it is asked again, or None."""
        name, spec = self.fields[self.index]
        typed = typed.strip()
        if not typed and "default" in spec:
            self.values[name] = spec["default"]
        elif not typed and name in self.required:
            return "this field needs a value"
        elif typed:
            value, problem = _value(spec, typed)
            if problem:
                return problem
            self.values[name] = value
        self.index += 1
        return None


def _value(spec, typed):
    """(the typed value as the field's type, None), or (None, why it does not fit)."""
    kind = spec.get("type")
    if isinstance(spec.get("enum"), list) and spec["enum"]:
        match = next((v for v in spec["enum"] if str(v).casefold() == typed.casefold()), None)
        return (match, None) if match is not None else (None, "type one of " + ", ".join(map(str, spec["enum"])))
    if kind == "boolean":
        if typed.casefold() in YES or typed.casefold() in NO:
            return typed.casefold() in YES, None
        return None, "type yes or no"
    if kind in ("number", "integer"):
        try:
            return int(typed), None
        except ValueError:
            pass
        try:
            number = float(typed)
        except ValueError:
            number = None
        if kind == "number" and number is not None and number == number and abs(number) != float("inf"):
            return number, None
        return None, f"type {KIND_WORDS[kind]}"
    return typed, None


def _shown(value):
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)
