"""What the explorer accepts from a browser: the request's fields, their JSON types, and registered names only.

The server may listen on a network (``--host``), so a request is read as a hostile client could write it:

- a field the page never sends, or a value of the wrong JSON type, is answered 400 with a message naming the
  field and what it takes (:func:`request_problems`), before anything else reads the request;
- the names in a request (model, method, tests) must be registered ones (:func:`name_problems`). A config file may
  name a model file or a plug-in ``module:attribute``, which ``parse_config`` opens or imports; a request's name
  must never reach it, or a client could make the server import any module or tell whether a file exists.
  A model file is offered by whoever starts the server (``simdesign explore --model FILE``), under its name.
"""
from __future__ import annotations

from pathlib import Path

from simdesign.significance import ANALYSES
from simdesign.core.designs import DESIGN_KINDS
from simdesign.core.suggest import did_you_mean
from simdesign.methods import method_names
from simdesign.model import PRESETS

WORD_CONTROLS = ("model", "method", "effect", "kind", "currency")  # a name or a word: a string
NUMBER_CONTROLS = ("effect_scale", "trials", "seed", "alpha", "pay_per_hour", "seconds_per_judgement",
                   "per_annotator")  # a number, as typed (a string) or as a JSON number


def design_fields() -> list[str]:
    """Every design kind's fields (the page sends the chosen kind's)."""
    return sorted({name for cls in DESIGN_KINDS.values() for name in cls.fields})


def request_fields() -> list[str]:
    """Every field a request to /api/check may hold."""
    return [*WORD_CONTROLS, *NUMBER_CONTROLS, *design_fields(), "tests", "start"]


def request_problems(form: dict) -> dict[str, list[str]]:
    """Field -> messages for fields the page never sends and values of the wrong JSON type (empty: none)."""
    problems: dict[str, list[str]] = {}
    allowed = request_fields()
    for name, value in form.items():
        message = None
        if name not in allowed:
            message = f"The request field {name!r} is not one of the explorer's controls; it takes {allowed}"
        elif name == "start":
            if not isinstance(value, bool):
                message = f"The 'start' field must be true or false; got {_shown(value)}"
        elif name == "tests":
            message = _tests_type_problem(value)
        elif name in WORD_CONTROLS:
            if not isinstance(value, str):
                message = f"The {name!r} field must be a string{_choices(name)}; got {_shown(value)}"
        elif value is not None and (isinstance(value, bool) or not isinstance(value, (str, int, float))):
            message = f"The {name!r} field must be a number (or its text); got {_shown(value)}"
        if message:
            problems[name] = [message]
    return problems


def _tests_type_problem(value) -> str | None:
    """The 'tests' field: a list of test names, or one comma-separated string of them."""
    if isinstance(value, str) or (isinstance(value, list) and all(isinstance(item, str) for item in value)):
        return None
    return (f"The 'tests' field must be a list of test names (strings) from {sorted(ANALYSES)}, or one "
            f"comma-separated string of them; got {_shown(value)}")


def _choices(name: str) -> str:
    allowed = {"method": list(method_names()), "kind": list(DESIGN_KINDS), "effect": ["zero", "fitted", "scale"],
               "model": "a preset " + str(list(PRESETS)) + " or a model the server was started with"}.get(name)
    return f" ({allowed})" if allowed else ""


def _shown(value) -> str:
    """A value for a message, cut short (a request may hold anything)."""
    text = repr(value)
    return f"{text[:60]}... ({type(value).__name__})" if len(text) > 60 else f"{text} ({type(value).__name__})"


def model_choice(name: str, models: dict[str, Path]) -> str | None:
    """The model a request's name stands for: a preset's name, or the path of a model the server offers."""
    if name in PRESETS:
        return name
    if name in models:
        return str(models[name])
    return None


def name_problems(form: dict, models: dict[str, Path]) -> list[str]:
    """Messages (each naming its control) for names in the form that are not registered; nothing is opened or
    imported to decide."""
    problems = []
    model = form.get("model")
    # (a mapping would be read as an inline model, whose 'file' key opens a file: a name only)
    if (model is not None and not isinstance(model, str)) or (
            isinstance(model, str) and model.strip() and model_choice(model.strip(), models) is None):
        offered = [*PRESETS, *models]
        problems.append(f"The 'model' control must be a preset or a model the server was started with "
                        f"('simdesign explore --model FILE'): one of {offered}; got {model!r}"
                        f"{did_you_mean(str(model).strip(), offered)}")
    method = form.get("method")
    if method is not None and method not in method_names():
        problems.append(f"The 'method' control must be one of {list(method_names())}; got {method!r}"
                        f"{did_you_mean(method, method_names())}")
    tests = form.get("tests")
    names = [t for t in tests.split(",") if t] if isinstance(tests, str) else list(tests or [])
    unknown = [name for name in names if name not in ANALYSES]
    if unknown:
        problems.append(f"The 'tests' control takes registered tests only ({sorted(ANALYSES)}); got {unknown}")
    return problems
