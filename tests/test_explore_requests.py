"""The explorer reads a request as a hostile client could write it (issue 39): registered names only, nothing a
client names is imported or opened, and a value of the wrong JSON type is a 400 naming the field."""
from __future__ import annotations

import builtins
import io
import pathlib
import sys

import pytest
import yaml

from simdesign.explore import controls, curves
from simdesign.model import load_model

pytest.importorskip("flask", reason="the explorer needs the 'explore' extra (flask)")

FORM = {"model": "coherence", "effect": "zero", "kind": "block", "blocks": "4", "docs_per_block": "5",
        "annotators_per_block": "3", "tests": ["ttest"], "trials": "20", "seed": "7", "start": False}


@pytest.fixture
def client(tmp_path):
    from simdesign.explore.app import create_app

    app = create_app(workers=0, figures_dir=tmp_path / "figures", configs_dir=curves.DEFAULT_CONFIGS)
    yield app.test_client()
    app.extensions["simdesign_pool"].close()


@pytest.fixture
def tripwire_module(tmp_path, monkeypatch):
    """An importable module whose import leaves a mark (a file beside it)."""
    mark = tmp_path / "imported.mark"
    (tmp_path / "sd_tripwire.py").write_text(f"open({str(mark)!r}, 'w').close()\nthing = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield mark
    sys.modules.pop("sd_tripwire", None)


@pytest.mark.parametrize("field", ["method", "tests"])
def test_a_module_a_client_names_is_never_imported(client, tripwire_module, field):
    value = "sd_tripwire:thing"
    answer = client.post("/api/check", json={**FORM, field: [value] if field == "tests" else value})
    assert answer.status_code == 200
    body = answer.get_json()
    assert body["run"] is None and field in body["errors"], body
    assert "registered" in body["errors"][field][0] or "one of" in body["errors"][field][0]
    assert "sd_tripwire" not in sys.modules and not tripwire_module.exists()


@pytest.fixture
def opened(monkeypatch):
    """The paths opened through open(), Path.open / read_text and pandas' readers while a request is answered."""
    seen: list[str] = []
    real_open, real_io_open = builtins.open, io.open

    def spy(file, *args, **kwargs):
        seen.append(str(file))
        return real_open(file, *args, **kwargs)

    def io_spy(file, *args, **kwargs):
        seen.append(str(file))
        return real_io_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", io_spy)
    return seen


@pytest.mark.parametrize("changes", [{"model": "SERVER_FILE"}, {"model": "{file: SERVER_FILE}"},
                                     {"model": "{preset: coherence, file: SERVER_FILE}"},
                                     {"seconds_per_judgement": "{times: SERVER_FILE}"}])
def test_a_server_file_a_client_names_is_never_opened(client, tmp_path, opened, changes):
    # a readable model file: opening it would make a good model, so only the rule keeps it closed
    secret = tmp_path / "server_model.yaml"
    secret.write_text(yaml.safe_dump(load_model("coherence").to_dict()))
    opened.clear()  # (writing it opened it)
    form = {**FORM, **{k: v.replace("SERVER_FILE", str(secret)) for k, v in changes.items()}}
    answer = client.post("/api/check", json=form)
    assert answer.status_code == 200
    body = answer.get_json()
    (control,) = body["errors"]
    assert control in changes and body["run"] is None
    assert not [path for path in opened if "server_model" in path], opened


def test_a_model_typo_gets_one_message_with_the_closest_name():
    checked = controls.check_controls({**FORM, "model": "coherenc"})
    assert checked.config is None and list(checked.errors) == ["model"] and checked.methods is None
    (message,) = checked.errors["model"]
    assert "got 'coherenc' (did you mean 'coherence'?)" in message


def test_check_controls_itself_takes_no_inline_model_naming_a_file(tmp_path, opened):
    secret = tmp_path / "server_model.yaml"
    secret.write_text(yaml.safe_dump(load_model("coherence").to_dict()))
    opened.clear()
    checked = controls.check_controls({**FORM, "model": {"file": str(secret)}})
    assert list(checked.errors) == ["model"] and not [path for path in opened if "server_model" in path]


def test_a_model_file_the_server_was_started_with_is_offered_by_name(tmp_path):
    from simdesign.explore.app import create_app

    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump(load_model("coherence").to_dict()))
    app = create_app(workers=0, figures_dir=tmp_path / "figures", models={"mine": path})
    client = app.test_client()
    try:
        assert "mine" in client.get("/api/options").get_json()["presets"]
        body = client.post("/api/check", json={**FORM, "model": "mine", "seconds_per_judgement": "25"}).get_json()
        assert body["errors"] == {}, body
        body = client.post("/api/check", json={**FORM, "model": str(path)}).get_json()
        assert list(body["errors"]) == ["model"] and "mine" in body["errors"]["model"][0]
    finally:
        app.extensions["simdesign_pool"].close()


@pytest.mark.parametrize("field, value", [
    ("tests", 5), ("tests", [5]), ("tests", {"name": "ttest"}), ("tests", [["ttest"]]), ("method", 3),
    ("method", ["likert"]), ("model", {"preset": "coherence"}), ("model", 1), ("kind", ["block"]), ("kind", None),
    ("effect", 0.5), ("trials", [20]), ("trials", {"n": 1}), ("blocks", True), ("seed", [1]), ("start", "no"),
    ("currency", 3), ("designs", "x"), ("designs", [{"kind": "block"}]), ("config", "/etc/passwd"),
])
def test_a_value_of_the_wrong_type_is_a_400_naming_the_field(client, field, value):
    answer = client.post("/api/check", json={**FORM, field: value})
    assert answer.status_code == 400
    body = answer.get_json()
    assert list(body["errors"]) == [field] and f"'{field}'" in body["error"], body
    # the message says what the field takes
    assert any(word in body["error"] for word in ("must be", "takes")), body["error"]


def test_the_page_s_own_values_pass_the_type_check(client):
    from simdesign.explore.fields import request_problems

    form = {**controls.DEFAULTS, **{f: str(v) for f, v in controls.DEFAULT_DESIGNS["block"].items()}, "start": True}
    assert request_problems(form) == {}
    for scenario in controls.SCENARIOS:
        assert request_problems({**form, **scenario["values"]}) == {}, scenario["name"]


def test_explore_refuses_a_model_file_that_is_not_a_model(tmp_path, capsys):
    from simdesign.cli.explore import served_models
    from simdesign.core.errors import ConfigError

    bad = tmp_path / "bad.yaml"
    bad.write_text("- 1\n")
    with pytest.raises(ConfigError):
        served_models([str(bad)])
    clash = tmp_path / "coherence.yaml"
    clash.write_text(yaml.safe_dump(load_model("coherence").to_dict()))
    with pytest.raises(ConfigError, match="preset"):
        served_models([str(clash)])
    assert served_models([str(clash.rename(tmp_path / "own.yaml"))]) == {"own": (tmp_path / "own.yaml").resolve()}
