"""The annotation-method interface and its registry (issue 28, part 1).

An *annotation method* is how annotators judge the outputs of one document: a Likert score per
output, a ranking of the outputs, or any method a user registers. Everything that differs between
methods lives in one :class:`AnnotationMethod` object, and the rest of the package asks that object
(no module outside :mod:`simdesign.methods` compares a method's name, ``tests/test_method_names.py``):

* **sampling**: which models generate it (:meth:`~AnnotationMethod.can_generate`) and the responses a
  latent value becomes (:meth:`~AnnotationMethod.responses`);
* **streams and labels**: the suffix of its random-stream key (:attr:`~AnnotationMethod.stream_suffix`)
  and of its results' labels (:attr:`~AnnotationMethod.result_suffix`); the default method has neither,
  so results computed before methods existed keep their streams and keys;
* **tests**: which registered analyses take its judgements (:meth:`~AnnotationMethod.accepts`), and
  warnings about tests measured to be miscalibrated on it (:meth:`~AnnotationMethod.warnings`);
* **stores**: the parts of a model its trials depend on (:meth:`~AnnotationMethod.fingerprint`);
* **tables**: the column its judgements come in, their orientation (higher = better for every test),
  how a table's mean is read (:attr:`~AnnotationMethod.value_name`, :attr:`~AnnotationMethod.best_is_low`);
* **cost**: the measured seconds per judged output (:meth:`~AnnotationMethod.measured_seconds`);
* **pilot work** (reading and checking a table, fitting, predictive-check statistics): functions of the
  ``pilot`` layer, named by the method (:attr:`~AnnotationMethod.steps`) and imported when asked for.

This package sits in the model layer (``tests/test_architecture.py``): the model asks a method for its
responses, so a method cannot import the model, the simulation or the pilot. Behaviour of higher layers
is therefore *named* (``"module:function"``) and resolved at call time by :meth:`AnnotationMethod.step`.
A method defined outside the package (a plug-in, ``tests/plugin_method.py``) gives plain functions instead.
"""
from __future__ import annotations

import importlib
from contextlib import contextmanager

import numpy as np

from simdesign.core.errors import ConfigError
from simdesign.core.registry import refuse_clash, same_entry
from simdesign.core.suggest import did_you_mean

# Name -> method, in registration order (the order configs, messages and model.methods list them).
REGISTERED: dict[str, "AnnotationMethod"] = {}


class AnnotationMethod:
    """One annotation method: subclass it, set the attributes, override what differs, and register an instance.

    Attributes
    ----------
    name : str
        The name configs and the command line use (``method: NAME``).
    label : str
        The name shown in tables, figures and reports.
    colour : str
        Its colour in figures comparing methods (a matplotlib colour).
    value_column : str
        The column of a judgements table holding its judgements.
    value_name : str
        What a system's mean of ``value_column`` is called in a report.
    best_is_low : bool
        Whether a low value in ``value_column`` is the best (ranks: 1 = best).
    rankings : bool
        Whether its responses order the outputs of one document (every (annotator, document) gives each
        output a different value): only tests declaring ``takes_rankings`` accept them.
    stream_suffix : tuple of str
        Labels appended to a trial's data-stream key (:func:`simdesign.core.seeds.data_rng`); the
        default method's is empty, so its streams are those of every stored result.
    result_suffix : str
        Appended to a test's label in stores and trial rows (empty for the default method).
    is_default : bool
        The method of a config that names none (exactly one registered method).
    model_requirement : str
        How a model comes to generate this method (said when a model cannot).
    planning_requirement : str
        What a plan comparing this method needs of its model (said when the plan's model cannot).
    analysis_note : str
        What a reader of an analysis of this method's table must know (empty: nothing).
    steps : dict
        Pilot-layer behaviour by role (``read_table``, ``orient``, ``describe``, ``fit``, ``check``):
        a ``"module:function"`` name or a function.
    """

    name: str = ""
    label: str = ""
    colour: str = "tab:gray"
    value_column: str = "score"
    value_name: str = "mean score"
    best_is_low: bool = False
    rankings: bool = False
    covers: str = "output"  # what one judgement covers: "output", "ranking" (all of a document's), "pair"
    stream_suffix: tuple = ()
    result_suffix: str = ""
    is_default: bool = False
    model_requirement: str = ""
    planning_requirement: str = "a model that generates it"
    analysis_note: str = ""
    steps: dict = {}
    origin: str | None = None  # the 'module:attribute' a config named it by, if any (set on import)

    def __repr__(self) -> str:
        return f"<annotation method {self.name!r}>"

    # --- sampling -----------------------------------------------------------------------------------
    def can_generate(self, model) -> bool:
        """Whether ``model`` generates judgements of this method."""
        raise NotImplementedError

    def responses(self, model, eta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The judgements, shape (n_pairs, S) of int, that latent means ``eta`` (same shape) become.

        Draws the method's latent noise from ``rng`` (its only source of randomness, after the model's
        own draws) and returns values where higher means better, the orientation every test reads.
        """
        raise NotImplementedError

    def judge(self, model, eta: np.ndarray, rng: np.random.Generator, design=None) -> dict:
        """One study's judgements as :class:`~simdesign.core.judgements.Judgements` fields: ``scores`` (what
        :meth:`responses` gives), and for methods whose judgements cover several outputs their own fields
        (Pairwise: ``preferences``, ``first_shown``). ``design`` is the study's design (which pairs a pairwise
        judgement shows depends on it)."""
        return {"scores": self.responses(model, eta, rng)}

    def items(self, n_outputs_judged: float, n_systems: int, design=None, model=None) -> float:
        """What an annotator sees and is paid for in a study judging ``n_outputs_judged`` outputs: outputs by
        default (Likert), rankings for Rank, comparisons for Pairwise (cost and limits use it)."""
        return n_outputs_judged / n_systems if self.covers == "ranking" else n_outputs_judged

    def recognises(self, columns) -> bool:
        """Whether a table with these column names (ours, after ``--columns``) holds this method's judgements: by
        default when it has :attr:`value_column` (Pairwise also knows an Arena battle log by its ``winner``)."""
        return self.value_column in set(columns)

    # --- tests, stores, warnings ---------------------------------------------------------------------
    def accepts(self, analysis) -> bool:
        """Whether a registered analysis (an :class:`~simdesign.significance.AnalysisInfo`) takes these judgements."""
        return not self.refusal(analysis)

    def refusal(self, analysis) -> str:
        """Why a registered analysis cannot take these judgements ('' when it can): the words a refusal shows.

        A plug-in method overrides this (not :meth:`accepts`) to refuse tests for a reason of its own.
        """
        takes_preferences = bool(getattr(analysis, "takes_preferences", False))
        if takes_preferences != (self.covers == "pair"):
            name = getattr(analysis, "name", analysis)
            return (f"{self.label} judgements are preferences between two outputs, and {name} reads one value "
                    "per output" if not takes_preferences else
                    f"{name} reads preferences between two outputs, and {self.label} judgements are not")
        if self.rankings and not getattr(analysis, "takes_rankings", False):
            return (f"{self.label} judgements are rankings (each annotator orders a document's outputs), and "
                    f"{getattr(analysis, 'name', analysis)} treats an output's values as independent scores")
        return ""

    def file_form(self, frame, n_systems: int):
        """A simulated study's long table (``score``: the responses, oriented so that higher is better) in the
        form this method's files have, which its table reader reads back (the default: ``score`` named as the
        method's judgement column; Rank writes ranks, 1 = best). ``simdesign replay --save`` writes it."""
        return frame.rename(columns={"score": self.value_column})

    def study_table(self, judgements):
        """One simulated study as this method's files hold it (what ``simdesign replay --save`` writes and
        ``simdesign analyse`` reads back): :meth:`file_form` of its long table by default; a method whose
        judgements cover several outputs writes its own rows (Pairwise: one comparison a row)."""
        return self.file_form(judgements.to_frame(), judgements.n_systems)

    def result_label(self, label: str) -> str:
        """A test's (or estimand's) label in the store and the trial rows under this method."""
        return f"{label}{self.result_suffix}"

    def fingerprint(self, model) -> dict:
        """What this method's trials depend on beyond the model's shared part (empty: nothing more)."""
        return {}

    def model_note(self, model) -> str:
        """What in ``model`` generates this method, for a figure's title (empty: nothing to say)."""
        return ""

    def warnings(self, config) -> list[str]:
        """Warnings before a run on this method (e.g. tests measured to be miscalibrated on it)."""
        return []

    # --- cost -----------------------------------------------------------------------------------------
    def measured_seconds(self, times: dict) -> dict:
        """The paper's measured seconds per judged output for this method, by task (empty: none measured).

        ``times`` is the file ``simdesign/model/presets/annotation_times.yaml``, one entry per method name.
        """
        found = times.get(self.name, {})
        return found if isinstance(found, dict) else {}

    # --- pilot work -----------------------------------------------------------------------------------
    def step(self, role: str):
        """The function playing ``role`` for this method (resolving a ``"module:function"`` name).

        Raises
        ------
        ConfigError
            The method has no function for the role (naming the roles it has).
        """
        found = self.steps.get(role)
        if found is None:
            raise ConfigError(f"The annotation method {self.name!r} has no {role!r} step "
                              f"(it has {sorted(self.steps)})")
        if callable(found):
            return found
        module, _, function = found.partition(":")
        return getattr(importlib.import_module(module), function)


def register_method(method: AnnotationMethod) -> AnnotationMethod:
    """Make ``method`` usable by name in configs, the command line and the API.

    Raises
    ------
    ConfigError
        Not a named :class:`AnnotationMethod`, a name taken by another method, or a second default.
    """
    if not isinstance(method, AnnotationMethod) or not method.name:
        raise ConfigError(f"An annotation method must be a named AnnotationMethod instance; got {method!r}")
    taken = REGISTERED.get(method.name)
    if taken is not None and not same_entry(taken, method):
        raise refuse_clash("annotation method", method.name, taken)
    if method.is_default and any(m.is_default for m in REGISTERED.values() if m.name != method.name):
        raise ConfigError(f"The annotation method {method.name!r} cannot be the default: "
                          f"{default_method().name!r} is")
    if not method.is_default and not (method.stream_suffix and method.result_suffix):
        raise ConfigError(f"The annotation method {method.name!r} needs a stream_suffix and a result_suffix "
                          "(only the default method keeps the plain streams and labels)")
    REGISTERED[method.name] = method
    return method


def register_step(method: AnnotationMethod, role: str, function) -> None:
    """Give ``method`` the function playing ``role`` (reading its tables, fitting, checking...).

    Called by the module that owns the function, in its own layer (the pilot layer registers the built-in
    methods' table readers and fits, the command line their commands): a method never names a function of a
    layer above it. Registering the same function again is harmless.

    Raises
    ------
    ConfigError
        ``function`` is not callable, or ``role`` already has another function.
    """
    if not callable(function):
        raise ConfigError(f"The {role!r} step of the annotation method {method.name!r} must be a function; "
                          f"got {function!r}")
    taken = method.steps.get(role)
    if taken is not None and not same_entry(taken, function):  # the same function again (a reload) is harmless
        raise ConfigError(f"The annotation method {method.name!r} has a {role!r} step already ({taken!r})")
    # an instance's own dict: a subclass without steps of its own would otherwise share its parent's
    method.steps = {**method.steps, role: function}


def unregister_method(name: str) -> None:
    """Remove a registered method (a test's plug-in; the built-in methods stay)."""
    REGISTERED.pop(name, None)


@contextmanager
def registered(method: AnnotationMethod):
    """``method`` registered for the duration of a ``with`` block (tests of plug-in methods)."""
    register_method(method)
    try:
        yield method
    finally:
        unregister_method(method.name)


def method_names() -> tuple:
    """The registered methods' names, in registration order."""
    return tuple(REGISTERED)


def all_methods() -> tuple:
    """The registered methods, in registration order."""
    return tuple(REGISTERED.values())


def default_method() -> AnnotationMethod:
    """The method of a config that names none."""
    return next(m for m in REGISTERED.values() if m.is_default)


def get_method(name, field: str = "method") -> AnnotationMethod:
    """The registered method called ``name`` (a method object is returned as it is).

    ``name`` may also be an importable ``module:attribute`` naming an :class:`AnnotationMethod` (what a
    config written for the command line gives for a method of the user's own): it is imported, registered
    under its own name, and remembers the path (:attr:`AnnotationMethod.origin`) so that a stored config
    names it again for a fresh process (``simdesign plot``, ``replay``).

    Raises
    ------
    ConfigError
        Unknown name, naming ``field``, the registered names and the closest one; or a ``module:attribute``
        that cannot be imported or is not an annotation method.
    """
    if isinstance(name, AnnotationMethod):
        return name
    if isinstance(name, str) and ":" in name and name not in REGISTERED:
        return _imported_method(name, field)
    found = REGISTERED.get(name) if isinstance(name, str) else None
    if found is None:
        raise ConfigError(f"The '{field}' field must be one of {', '.join(REGISTERED)}; got {name!r}"
                          f"{did_you_mean(name, REGISTERED)}")
    return found


def _imported_method(path: str, field: str) -> AnnotationMethod:
    """The method an importable ``module:attribute`` names, registered (see :func:`get_method`)."""
    module_name, _, attribute = path.partition(":")
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except Exception as exc:  # noqa: BLE001 - a plug-in's import may fail in any way; say how, naming it
        raise ConfigError(f"The '{field}' field names {path!r}, which cannot be imported "
                          f"({type(exc).__name__}: {exc})") from exc
    if not isinstance(found, AnnotationMethod):
        raise ConfigError(f"The '{field}' field names {path!r}, which is not an AnnotationMethod "
                          f"(got {type(found).__name__})")
    register_method(found)
    found.origin = path
    return found


def config_name(name: str) -> str:
    """How a config names a method: its import path if it came from one (a fresh process finds it), else its name."""
    return get_method(name).origin or get_method(name).name


def split_result_label(label: str) -> tuple[str, str]:
    """(test label, method name) of a result label; the inverse of :meth:`AnnotationMethod.result_label`."""
    for method in REGISTERED.values():
        if method.result_suffix and label.endswith(method.result_suffix) and len(label) > len(method.result_suffix):
            return label[:-len(method.result_suffix)], method.name
    return label, default_method().name
