"""The explorer's web application (Flask): one page of our own, JSON for its controls, PNG pictures.

Everything the page loads comes from this server (its HTML, script and style are files of this
package; the pictures are drawn here with matplotlib), so it works offline. Every request that fails
answers with a JSON message: the server goes on.
"""
from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from importlib import resources
from pathlib import Path

from flask import Flask, Response, jsonify, request
from werkzeug.serving import WSGIRequestHandler

from simdesign.core.estimands import estimand_label, headline_estimand
from simdesign.explore import controls, curves, fields
from simdesign.explore.live import KEPT_RUNS, ChunkPool, Runs
from simdesign.methods import get_method
from simdesign.model.common import effect_scale
from simdesign.studies.rates.config import stable_digest

log = logging.getLogger(__name__)
STATIC_FILES = {"explorer.js": "text/javascript", "explorer.css": "text/css"}
KEPT_PICTURES = 64
MAX_DRAWN_PAIRS = 2_000_000  # (annotator, document) pairs; larger designs are not drawn
# The page's "enlarge" view shows the design picture across a projector's width: drawn again at this resolution
# (about 1150 pixels wide) rather than the page's picture (460 pixels) scaled up and blurred.
LARGE_DPI = 250
LARGE_SUFFIX = "-large"
# pyplot keeps global state: one drawing at a time across the server's threads.
DRAWING = threading.Lock()


class QuietRequestHandler(WSGIRequestHandler):
    """Werkzeug's request handler without a log line per answered request (the page polls several times a
    second); requests answered with an error (4xx, 5xx) are still logged, and so are the server's own errors."""

    def log_request(self, code="-", size="-"):
        try:
            status = int(getattr(code, "value", code))
        except (TypeError, ValueError):
            status = 0  # not a status: log it, as werkzeug would
        if status == 0 or status >= 400:
            super().log_request(code, size)


def _static(name: str) -> str:
    return resources.files("simdesign.explore").joinpath("static", name).read_text()


class Pictures:
    """PNG pictures by name, the most recent ones kept.

    A design's picture is registered with what draws it and drawn when the page asks for it, so that
    the answer to a change (and the live run) does not wait for matplotlib.
    """

    def __init__(self):
        self._items: OrderedDict[str, object] = OrderedDict()  # name -> PNG bytes, or a function making them
        self._lock = threading.Lock()

    def put(self, name: str, png_or_maker) -> None:
        with self._lock:
            self._items[name] = png_or_maker
            self._items.move_to_end(name)
            while len(self._items) > KEPT_PICTURES:
                self._items.popitem(last=False)

    def __contains__(self, name: str) -> bool:
        with self._lock:
            return name in self._items

    def get(self, name: str) -> bytes | None:
        with self._lock:
            item = self._items.get(name)
        if item is None or isinstance(item, bytes):
            return item
        with DRAWING:
            png = item()
        self.put(name, png)
        return png


def create_app(workers: int = 2, figures_dir: Path = curves.DEFAULT_FIGURES,
               configs_dir: Path = curves.DEFAULT_CONFIGS, models: dict | None = None) -> Flask:
    """The explorer application.

    Parameters
    ----------
    workers : int
        Worker processes computing trials (0: in the server process, for tests).
    figures_dir, configs_dir : path-like
        Where the precomputed curves (``<name>.csv``) and their configs (``<name>.yaml``) are.
    models : dict, optional
        Name -> model file offered beside the presets (``simdesign explore --model``): the only files a
        request can have the server read.

    Returns
    -------
    flask.Flask
        With ``app.extensions['simdesign_runs']`` (the live runs) and ``['simdesign_pool']``.
    """
    app = Flask(__name__, static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = controls.MAX_REQUEST_BYTES  # a larger body is answered 413 unread
    pool = ChunkPool(workers)
    runs = Runs(pool)
    pictures = Pictures()
    models = dict(models or {})
    app.extensions["simdesign_pool"] = pool
    app.extensions["simdesign_runs"] = runs

    _add_page_routes(app)

    @app.get("/api/options")
    def api_options():
        return jsonify(**controls.options(models), curves=curves.curve_tables(figures_dir, configs_dir))

    @app.post("/api/check")
    def api_check():
        return answer_check(request.get_json(silent=True), runs, pictures, models)

    @app.get("/api/run/<key>")
    def api_run(key: str):
        run = runs.get(key)
        if run is None:
            return jsonify(error=f"no run {key!r} (the server keeps the last {KEPT_RUNS} runs)"), 404
        return jsonify(run.snapshot())

    @app.post("/api/cancel/<key>")
    def api_cancel(key: str):
        return jsonify(cancelled=runs.cancel(key))

    @app.post("/api/cancel")
    def api_cancel_current():
        """Cancel whatever is computing (the page's Cancel: also a run whose start the page has not heard of)."""
        return jsonify(cancelled=runs.cancel_current())

    @app.get("/picture/<name>.png")
    def picture(name: str):
        png = pictures.get(name)
        if png is None:
            return jsonify(error=f"no picture {name!r}"), 404
        return Response(png, mimetype="image/png")

    @app.get("/api/position/<key>")
    def api_position(key: str):
        return jsonify(**position(key, request.args.get("table", ""), runs, pictures, figures_dir, configs_dir))

    @app.errorhandler(Exception)
    def failed(exc):
        from werkzeug.exceptions import HTTPException

        if isinstance(exc, HTTPException):
            return jsonify(error=str(exc)), exc.code
        log.exception("request failed")
        return jsonify(error=f"{type(exc).__name__}: {exc}"), 500

    return app


def _add_page_routes(app: Flask) -> None:
    """The page itself: its HTML, script and style (files of this package)."""

    @app.get("/")
    def index():
        return Response(_static("explorer.html"), mimetype="text/html")

    @app.get("/static/<name>")
    def static_file(name: str):
        if name not in STATIC_FILES:
            return jsonify(error=f"no static file {name!r}"), 404
        return Response(_static(name), mimetype=STATIC_FILES[name])

    @app.get("/favicon.ico")
    def favicon():
        return Response(status=204)


def answer_check(form, runs: Runs, pictures: Pictures, models: dict):
    """The answer to /api/check: 400 for what the page never sends (a field or a JSON type), refused before
    anything reads the values; else :func:`check_and_start`'s."""
    if not isinstance(form, dict):
        return jsonify(error="the request must be a JSON object of control values"), 400
    problems = fields.request_problems(form)
    if problems:
        return jsonify(error="; ".join(m for messages in problems.values() for m in messages), errors=problems), 400
    return jsonify(**check_and_start(form, runs, pictures, models))


def check_and_start(form: dict, runs: Runs, pictures: Pictures, models: dict | None = None) -> dict:
    """Check the controls; when they are good, draw the design and start (or find) its live run.

    ``form['start'] = False`` (after the page's Cancel) checks and draws without starting a run: a kept
    run of the same setting is shown, otherwise ``run`` is None.
    """
    start = form.get("start", True) is not False
    checked = controls.check_controls(form, models)
    answer = {"errors": checked.errors, "totals": None, "picture": None, "run": None, "methods": checked.methods,
              "warnings": checked.warnings}
    if checked.config is None:
        answer["picture"] = design_picture_only(checked, pictures)
        return {**answer, "picture_large": large_picture(answer["picture"])}
    config = checked.config
    key = stable_digest(config.to_mapping())
    run = runs.start(key, config) if start else runs.get(key)
    answer["totals"] = controls.totals(config, checked.cost)
    answer["picture"] = draw_picture(config.designs[0], config.model.n_systems, config.seed, pictures)
    answer["run"] = None if run is None else run.snapshot()
    return {**answer, "picture_large": large_picture(answer["picture"])}


def draw_picture(design, n_systems: int, seed: int, pictures: Pictures) -> str | None:
    """The URL of a design's picture (drawn once, when first asked for)."""
    from simdesign.studies.design_picture import design_png

    if design.pairs > MAX_DRAWN_PAIRS:
        return None  # drawing would take longer than the page should wait; the totals say the size
    name = f"{design.label}-s{n_systems}-seed{seed}"
    if name not in pictures:
        pictures.put(name, lambda: design_png(design, n_systems=n_systems, seed=seed))
    if name + LARGE_SUFFIX not in pictures:  # drawn only when the page's enlarge view asks for it
        pictures.put(name + LARGE_SUFFIX, lambda: design_png(design, n_systems=n_systems, seed=seed, dpi=LARGE_DPI))
    return f"/picture/{name}.png"


def large_picture(url: str | None) -> str | None:
    """The URL of the enlarge view's picture of a design picture's URL (:func:`draw_picture` registers both)."""
    return None if url is None else url.removesuffix(".png") + LARGE_SUFFIX + ".png"


def design_picture_only(checked, pictures: Pictures) -> str | None:
    """The design's picture when the design itself is good although another control is not."""
    from simdesign.core.errors import ConfigError
    from simdesign.studies.rates.config import parse_designs

    errors: list[str] = []
    if "designs" not in checked.mapping:
        return None  # the controls were refused unread (a value too long)
    try:
        designs = parse_designs(checked.mapping["designs"], errors)
    except ConfigError:
        return None
    if errors or len(designs) != 1:
        return None
    return draw_picture(designs[0], 5, 0, pictures)


def position(key: str, table_name: str, runs: Runs, pictures: Pictures, figures_dir, configs_dir) -> dict:
    """The second view: which curve tables exist, and the picture of the current design on one of them.

    The table follows the run's estimand: the one asked for (the page's choice) when it has rows of the
    estimand, else :func:`curves.best_table`'s.
    """
    run = runs.get(key)
    tables = curves.curve_tables(figures_dir, configs_dir)
    if run is None:
        return {"tables": tables, "table": None, "picture": None, "message": "no results yet"}
    config = run.config
    estimand = headline_estimand(config.is_null)
    asked = next((t for t in tables if t["name"] == table_name), None)
    chosen = (table_name if asked is not None and estimand in asked["estimands"]
              else curves.best_table(tables, config.model_source, estimand))
    entry = next((t for t in tables if t["name"] == chosen), None)
    answer = {"tables": tables, "table": chosen, "estimand": estimand, "picture": None}
    what = estimand_label(estimand)
    if entry is None:
        return {**answer, "message": f"No precomputed curves of {what} (figures/*.csv) were found"}
    if entry["path"] is None:
        return {**answer, "message": f"No precomputed table figures/{chosen}.csv; make it with 'simdesign run "
                                     f"configs/{chosen}.yaml' (which writes the figure's summary table beside it)"}
    try:
        table = curves.read_curves(entry["path"])
    except (OSError, ValueError) as exc:
        return {**answer, "message": f"cannot read {entry['path']}: {exc}"}
    snapshot = run.snapshot()
    design = config.designs[0]
    method = ", ".join(get_method(m).label for m in config.methods)
    title = (f"{chosen}: {entry['description'] or 'precomputed'}\nstars: your design {design.label} "
             f"({design.annotators} annotators, {method}), {snapshot['trials_done']} trials")
    caveat = curves.effect_caveat(table, estimand, effect_scale(config.effect))
    with DRAWING:
        png, colours = curves.position_png(table, estimand, snapshot["rows"], design.annotators, title, caveat)
    name = f"position-{key[:16]}-{chosen}-{snapshot['trials_done']}"
    pictures.put(name, png)
    # the caveat is also said beside the picture, in the page's words, where it is read before the figure
    return {**answer, "picture": f"/picture/{name}.png", "message": "", "trials": snapshot["trials_done"],
            "caveat": caveat or "", "colours": colours}
